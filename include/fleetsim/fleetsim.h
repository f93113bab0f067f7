/* fleetsim's C ABI, for Go, Rust, Julia and anything else that links C: create a scenario from
 * YAML text, run it to the run document (JSON text, docs/output-schema.md), free what was
 * returned. Every function returning a pointer returns NULL on error and, when `error` is not
 * NULL, sets *error to a message to free with fleetsim_free_string. */
#ifndef FLEETSIM_H
#define FLEETSIM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fleetsim_scenario fleetsim_scenario;

/* A scenario from YAML text (NULL: the built-in default) with `n_overrides` "path=value" changes. */
fleetsim_scenario* fleetsim_scenario_from_yaml(const char* yaml, const char* const* overrides, int n_overrides,
                                               char** error);
/* A scenario from a file. */
fleetsim_scenario* fleetsim_scenario_from_file(const char* path, const char* const* overrides, int n_overrides,
                                               char** error);
void fleetsim_scenario_free(fleetsim_scenario* s);

/* Run replication `replication` of the scenario's seed; the run document as JSON text. */
char* fleetsim_run_json(const fleetsim_scenario* s, uint32_t replication, char** error);
/* The same with another seed. */
char* fleetsim_run_json_seed(const fleetsim_scenario* s, uint64_t seed, uint32_t replication, char** error);

void fleetsim_free_string(char* text);
const char* fleetsim_version(void);

#ifdef __cplusplus
}
#endif

#endif /* FLEETSIM_H */
