/* The plugin loader: each rejection case with a tiny .so built by the test
 * build (tests/unit/plugins/variant.c), and the real echo plugin. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"

static atl_registry_t reg;
static atl_host_t host;
static atl_load_options_t opt;

static void setup(void) {
  memset(&reg, 0, sizeof(reg));
  memset(&host, 0, sizeof(host));
  host.struct_size = sizeof(host);
  opt = (atl_load_options_t){.min_minor = 0,
                             .timeout_ms = 1000,
                             .long_timeout_ms = 60000,
                             .host_template = &host};
}

static void teardown(void) {
  atl_registry_unload(&reg);
}

TestSuite(loader, .init = setup, .fini = teardown);

static const char *lib(const char *name) {
  static char path[4096];
  const char *b = getenv("ATL_TEST_BUILDDIR");
  snprintf(path, sizeof(path), "%s/tests/unit/plugins/.libs/%s.so",
           b ? b : ATL_TEST_BUILDDIR, name);
  return path;
}

/* Loads name and expects rejection with a reason containing want. */
static void expect_reject(const char *name, int code, const char *want) {
  char *reason = NULL;
  int rc = atl_registry_load(&reg, lib(name), &opt, &reason);
  cr_assert_eq(rc, code, "%s: expected %s, got %s (%s)", name,
               atl_err_name(code), atl_err_name(rc), reason ? reason : "");
  cr_assert_not_null(reason, "%s: no reason given", name);
  cr_assert(strstr(reason, want) != NULL, "%s: reason '%s' lacks '%s'", name,
            reason, want);
  free(reason);
}

Test(loader, good_plugin_loads_and_registers_its_tool) {
  char *reason = NULL;
  cr_assert_eq(atl_registry_load(&reg, lib("lt_good"), &opt, &reason), 0, "%s",
               reason ? reason : "");
  cr_assert_eq(reg.n_plugins, 1);
  const atl_tool_entry_t *t = atl_registry_find(&reg, "lt_good_tool");
  cr_assert_not_null(t);
  cr_assert_eq(t->timeout_ms, 1000);
  cr_assert_eq(reg.plugins[0]->state, (void *)0x1);
  cr_assert_str_eq(reg.plugins[0]->desc.version, "0.0.1");
}

/* A tool whose schema some LLM provider would refuse is left out, with
 * the reason logged; the plugin and its other tools load. */
Test(loader, a_tool_a_provider_would_refuse_is_not_loaded) {
  char *reason = NULL;
  cr_assert_eq(atl_registry_load(&reg, lib("lt_wire_refused"), &opt, &reason),
               0, "%s", reason ? reason : "");
  cr_assert_not_null(atl_registry_find(&reg, "lt_wire_refused_tool"));
  cr_assert_null(atl_registry_find(&reg, "lt_wire_refused_cyclic"));
  cr_assert_eq(reg.n_tools, 1);
}

Test(loader, missing_file) {
  expect_reject("does_not_exist", ATL_EPLUGIN, "dlopen failed");
}

Test(loader, no_descriptor_symbol) {
  expect_reject("lt_no_symbol", ATL_EABI, "no 'atl_plugin' symbol");
}

Test(loader, wrong_abi_major) {
  expect_reject("lt_bad_major", ATL_EABI, "built for plugin ABI 2.");
}

Test(loader, too_old_minor) {
  opt.min_minor = ATL_PLUGIN_ABI_MINOR + 1;
  expect_reject("lt_good", ATL_EABI, "needs at least");
}

Test(loader, descriptor_too_small) {
  expect_reject("lt_small_struct", ATL_EABI, "struct_size is 16 bytes");
}

Test(loader, tool_struct_too_small) {
  expect_reject("lt_small_tool", ATL_EABI, "tool_size is 8 bytes");
}

Test(loader, schema_not_json) {
  expect_reject("lt_bad_schema_json", ATL_EPLUGIN, "invalid input schema");
}

Test(loader, schema_unsupported_keyword) {
  expect_reject("lt_bad_schema_keyword", ATL_EPLUGIN, "patternProperties");
}

Test(loader, schema_bad_keyword_value) {
  expect_reject("lt_bad_schema_value", ATL_EPLUGIN, "minimum");
}

Test(loader, schema_root_not_object) {
  expect_reject("lt_bad_schema_root", ATL_EPLUGIN, "root must be");
}

Test(loader, tool_name_taken_by_another_plugin) {
  char *reason = NULL;
  cr_assert_eq(atl_registry_load(&reg, lib("lt_good"), &opt, &reason), 0);
  expect_reject("lt_dup_other", ATL_EPLUGIN,
                "already taken by plugin 'lt_good'");
  /* The first plugin is untouched. */
  cr_assert_eq(reg.n_plugins, 1);
  cr_assert_eq(atl_registry_find(&reg, "lt_good_tool")->plugin, reg.plugins[0]);
}

Test(loader, tool_declared_twice) {
  expect_reject("lt_dup_self", ATL_EPLUGIN, "declared twice");
}

Test(loader, failing_init) {
  expect_reject("lt_init_fail", ATL_EIO, "init failed");
  cr_assert_eq(reg.n_plugins, 0);
  cr_assert_eq(reg.n_tools, 0);
}

Test(loader, null_handler) {
  expect_reject("lt_null_handler", ATL_EPLUGIN, "handler is NULL");
}

Test(loader, a_preview_hook_needs_a_namespace_to_watch) {
  expect_reject("lt_preview_alone", ATL_EPLUGIN,
                "preview and preview_of go together");
  expect_reject("lt_preview_bad_ns", ATL_EPLUGIN,
                "got preview set and "
                "preview_of 'Scene!'");
}

Test(loader, the_same_plugin_twice) {
  char *reason = NULL;
  cr_assert_eq(atl_registry_load(&reg, lib("lt_good"), &opt, &reason), 0);
  expect_reject("lt_good", ATL_EPLUGIN, "already loaded");
}

Test(loader, echo_plugin_from_the_build) {
  char path[4096], *reason = NULL;
  const char *b = getenv("ATL_TEST_BUILDDIR");
  snprintf(path, sizeof(path), "%s/plugins/.libs/echo.so",
           b ? b : ATL_TEST_BUILDDIR);
  cr_assert_eq(atl_registry_load(&reg, path, &opt, &reason), 0, "%s",
               reason ? reason : "");
  /* The build's echo offers echo alone: the tests' tools are echo_test's,
   * which only the tests load. */
  cr_assert_eq(reg.n_tools, 1);
  cr_assert_str_eq(reg.tools[0]->tool.name, "echo");
  snprintf(path, sizeof(path), "%s/tests/plugins/.libs/echo_test.so",
           b ? b : ATL_TEST_BUILDDIR);
  cr_assert_eq(atl_registry_load(&reg, path, &opt, &reason), 0, "%s",
               reason ? reason : "");
  const char *names[] = {"echo",        "echo_fail",  "echo_image",
                         "echo_secret", "echo_sleep", "echo_store",
                         "echo_vault"};
  cr_assert_eq(reg.n_tools, 7);
  for (size_t i = 0; i < 7; i++)
    cr_assert_str_eq(reg.tools[i]->tool.name, names[i], "tools sorted");
  cr_assert_eq(atl_registry_find(&reg, "echo_sleep")->timeout_ms, 2000);
}

Test(loader, directory_with_strict_and_disable) {
  char dir[4096];
  const char *b = getenv("ATL_TEST_BUILDDIR");
  snprintf(dir, sizeof(dir), "%s/tests/unit/plugins/.libs",
           b ? b : ATL_TEST_BUILDDIR);
  /* Not strict: the good ones load, the bad ones are skipped. */
  cr_assert_eq(atl_registry_load_dir(&reg, dir, "lt_dup_other", 0, &opt), 0);
  cr_assert_not_null(atl_registry_find(&reg, "lt_good_tool"));
  cr_assert_null(atl_registry_find(&reg, "lt_bad_major_tool"));
  atl_registry_unload(&reg);
  /* Strict: the first failure is returned. */
  cr_assert_neq(atl_registry_load_dir(&reg, dir, NULL, 1, &opt), 0);
}
