/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* extbody-cli-keys.c - the command's own keys bound to typed fields (see
 * extbody-cli-keys.h); test-config checks every one is a key. */
#include "extbody-cli-keys.h"

CliSettings
extbody_cli_keys_of (const EbConfig *config)
{
  CliSettings s;
#define TEXT_(k) s.k = eb_config_get_string (config, #k);
#define NUM_(k)  s.k = eb_config_get_uint64 (config, #k);
#define BOOL_(k) s.k = eb_config_get_boolean (config, #k);
  CLI_SETTINGS (TEXT_, NUM_, BOOL_)
#undef TEXT_
#undef NUM_
#undef BOOL_
  return s;
}
