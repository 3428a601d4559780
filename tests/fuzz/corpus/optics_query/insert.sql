INSERT INTO objects(id) VALUES (99)
