/* The C ABI: run the built-in scenario with one override and print the start of its JSON. */
#include <fleetsim/fleetsim.h>

#include <stdio.h>
#include <string.h>

int main(void) {
  char* error = NULL;
  const char* overrides[] = {"fleet.replicas=3"};
  fleetsim_scenario* s = fleetsim_scenario_from_yaml(NULL, overrides, 1, &error);
  if (!s) {
    fprintf(stderr, "%s\n", error);
    fleetsim_free_string(error);
    return 2;
  }
  char* json = fleetsim_run_json(s, 0, &error);
  if (!json) {
    fprintf(stderr, "%s\n", error);
    fleetsim_free_string(error);
    fleetsim_scenario_free(s);
    return 1;
  }
  printf("fleetsim %s: %zu bytes of JSON, %s\n", fleetsim_version(), strlen(json),
         strstr(json, "\"schema_version\": 1") ? "schema_version 1" : "no schema_version");
  fleetsim_free_string(json);
  fleetsim_scenario_free(s);
  /* an error comes back as text, located */
  fleetsim_scenario* bad = fleetsim_scenario_from_yaml("name: x\nduration_s: 60\nmodel: llama-3.1-8b\ndevice: h100-sxm-80gb\nfleet: {replicas: 2, routr: x}\n"
        "workload: {arrival: {process: poisson, rate_per_s: 1}, prompt_tokens: {dist: fixed, value: 100}, "
        "output_tokens: {dist: fixed, value: 10}}\n", NULL, 0, &error);
  if (bad || !error || !strstr(error, "unknown key 'routr'")) return 1;
  printf("a bad scenario says: %s\n", error);
  fleetsim_free_string(error);
  return 0;
}
