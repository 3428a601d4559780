SELECT 'drop table rays; replace' -- comment
;