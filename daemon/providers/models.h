/* What the daemon knows of the models it may be pointed at: each one's
 * context window, its largest answer, and the request parameters it
 * insists on. The APIs refuse a request whose parameters do not fit the
 * model (OpenAI's reasoning models refuse max_tokens, Claude Opus 4.7
 * refuses budgeted thinking, a max_tokens above the model's largest answer
 * is refused) and answer nothing useful when a thinking budget eats the
 * answer's (Gemini 2.5): the request builders look the model up here.
 * doc/providers.md lists the figures and their sources.
 */
#ifndef ATL_MODELS_H
#define ATL_MODELS_H

#include <stdint.h>

enum {
  /* OpenAI: a reasoning model (o-series, gpt-5): max_completion_tokens,
   * never max_tokens. */
  ATL_MODEL_REASONING = 1u << 0,
  /* Anthropic: takes thinking {"type": "adaptive"} (and thinks). */
  ATL_MODEL_ADAPTIVE = 1u << 1,
  /* Anthropic: refuses thinking {"type": "enabled", "budget_tokens"}. */
  ATL_MODEL_ADAPTIVE_ONLY = 1u << 2,
  /* Gemini 2.5: thinks within generationConfig.thinkingConfig.
   * thinkingBudget: 0 (off, with ATL_MODEL_THINKING_OFF) or within
   * [think_min, think_max]. */
  ATL_MODEL_THINKING_BUDGET = 1u << 3,
  /* Gemini 3: thinks at a thinkingLevel; its budget is not settable. */
  ATL_MODEL_THINKING_LEVEL = 1u << 4,
  /* Gemini 2.5: a thinkingBudget of 0 turns thinking off. */
  ATL_MODEL_THINKING_OFF = 1u << 5,
  /* Anthropic: has extended thinking (3.7 Sonnet and the 4 models); the
   * others refuse a "thinking" parameter. */
  ATL_MODEL_THINKS = 1u << 6,
};

typedef struct {
  const char *prefix;  /* the model names it covers (the longest wins) */
  const char *type;    /* the provider type it belongs to */
  uint32_t context;    /* input tokens the window holds */
  uint32_t max_output; /* the largest answer, thinking included */
  unsigned flags;
  int32_t think_min, think_max; /* ATL_MODEL_THINKING_BUDGET's range */
} atl_model_info_t;

/* The entry of a model of a provider type, or NULL for one this table
 * does not know (a local server's, a newer one): then nothing is assumed.
 * A vendor path before the name ("openai/gpt-5", "models/gemini-2.5-pro")
 * is looked through. */
const atl_model_info_t *atl_model_info(const char *type, const char *model);

/* The context window to plan for when neither the configuration nor the
 * table says: conservative, since a request over the window is refused. */
#define ATL_MODEL_DEFAULT_CONTEXT 128000u

#endif
