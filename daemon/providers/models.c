/* The known models (see models.h). The figures come from the providers'
 * model pages and from the refusals users quote (doc/providers.md); a
 * model not listed gets nothing assumed of it. */
#include "atl-build.h"

#include <string.h>

#include "models.h"

#define R ATL_MODEL_REASONING
#define TH ATL_MODEL_THINKS
#define AD (ATL_MODEL_ADAPTIVE | ATL_MODEL_THINKS)
#define AO (ATL_MODEL_ADAPTIVE | ATL_MODEL_ADAPTIVE_ONLY | ATL_MODEL_THINKS)
#define TB ATL_MODEL_THINKING_BUDGET
#define TL ATL_MODEL_THINKING_LEVEL
#define TOFF (ATL_MODEL_THINKING_BUDGET | ATL_MODEL_THINKING_OFF)

static const atl_model_info_t models[] = {
    /* Anthropic: every window is 200k tokens. */
    {"claude-3-haiku", "anthropic", 200000, 4096, 0, 0, 0},
    {"claude-3-opus", "anthropic", 200000, 4096, 0, 0, 0},
    {"claude-3-5-haiku", "anthropic", 200000, 8192, 0, 0, 0},
    {"claude-3-5-sonnet", "anthropic", 200000, 8192, 0, 0, 0},
    /* Its first release answered at most 4096 ("max_tokens: 10000 > 4096,
     * which is the maximum allowed number of output tokens for
     * claude-3-5-sonnet-20240620"). */
    {"claude-3-5-sonnet-20240620", "anthropic", 200000, 4096, 0, 0, 0},
    {"claude-3-7-sonnet", "anthropic", 200000, 64000, TH, 0, 0},
    {"claude-sonnet-4", "anthropic", 200000, 64000, TH, 0, 0},
    {"claude-opus-4", "anthropic", 200000, 32000, TH, 0, 0},
    {"claude-sonnet-4-5", "anthropic", 200000, 64000, TH, 0, 0},
    {"claude-haiku-4-5", "anthropic", 200000, 64000, TH, 0, 0},
    {"claude-opus-4-5", "anthropic", 200000, 64000, TH, 0, 0},
    {"claude-sonnet-4-6", "anthropic", 200000, 64000, AD, 0, 0},
    {"claude-opus-4-6", "anthropic", 200000, 128000, AD, 0, 0},
    {"claude-opus-4-7", "anthropic", 200000, 128000, AO, 0, 0},
    {"claude-opus-4-8", "anthropic", 200000, 128000, AO, 0, 0},
    {"claude-sonnet-5", "anthropic", 200000, 64000, AO, 0, 0},
    /* OpenAI. */
    {"gpt-4-turbo", "openai", 128000, 4096, 0, 0, 0},
    {"gpt-4o", "openai", 128000, 16384, 0, 0, 0},
    {"gpt-4.1", "openai", 1047576, 32768, 0, 0, 0},
    {"o1", "openai", 200000, 100000, R, 0, 0},
    {"o3", "openai", 200000, 100000, R, 0, 0},
    {"o4-mini", "openai", 200000, 100000, R, 0, 0},
    /* gpt-5's 400k window counts the answer: 272k are left for input. */
    {"gpt-5", "openai", 272000, 128000, R, 0, 0},
    {"gpt-5-chat", "openai", 128000, 16384, 0, 0, 0},
    /* Gemini. */
    {"gemini-1.5", "gemini", 1048576, 8192, 0, 0, 0},
    {"gemini-2.0-flash", "gemini", 1048576, 8192, 0, 0, 0},
    {"gemini-2.5-pro", "gemini", 1048576, 65536, TB, 128, 32768},
    {"gemini-2.5-flash", "gemini", 1048576, 65536, TOFF, 1, 24576},
    {"gemini-2.5-flash-lite", "gemini", 1048576, 65536, TOFF, 512, 24576},
    {"gemini-3", "gemini", 1048576, 65536, TL, 0, 0},
};

/* The name after a vendor path: "openai/gpt-5" and "models/gemini-x" are
 * gpt-5 and gemini-x. */
static const char *base_name(const char *model) {
  const char *slash = strrchr(model, '/');
  return slash ? slash + 1 : model;
}

/* Whether name is prefix followed by the end, a '-', a '.', a ':' or a
 * '@' (a date, a variant, a tag), so that "o1" covers "o1-2024-12-17" but
 * not "o10". */
static int covers(const char *prefix, const char *name) {
  size_t n = strlen(prefix);
  return strncmp(prefix, name, n) == 0 &&
         (name[n] == '\0' || strchr("-.:@", name[n]) != NULL);
}

const atl_model_info_t *atl_model_info(const char *type, const char *model) {
  if (type == NULL || model == NULL)
    return NULL;
  const char *name = base_name(model);
  const atl_model_info_t *best = NULL;
  for (size_t i = 0; i < sizeof(models) / sizeof(models[0]); i++)
    if (strcmp(models[i].type, type) == 0 && covers(models[i].prefix, name) &&
        (best == NULL || strlen(models[i].prefix) > strlen(best->prefix)))
      best = &models[i];
  return best;
}
