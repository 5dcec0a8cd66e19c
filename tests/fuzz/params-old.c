/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* params-old.c - the parameter parser and URL reassembly as they were before
 * the speed work of issue 16 (tests/fuzz/old/, verbatim copies), renamed so
 * that they link beside the current ones: the reference of the differential
 * check fuzz-paramsdiff.c. Test-only; never part of libextbody. */
#define EbParams OldEbParams
#define _EbParams _OldEbParams
#define eb_params_parse old_eb_params_parse
#define eb_params_parse_only old_eb_params_parse_only
#define eb_params_free old_eb_params_free
#define eb_params_get_media_type old_eb_params_get_media_type
#define eb_params_get old_eb_params_get
#define eb_params_get_n old_eb_params_get_n
#define eb_params_get_name_at old_eb_params_get_name_at
#define eb_params_get_warnings old_eb_params_get_warnings
#define eb_params_get_octets old_eb_params_get_octets
#define eb_params_content_type_media_type old_eb_params_content_type_media_type
#define eb_urlparam_reassemble old_eb_urlparam_reassemble
#define eb_urlparam_split old_eb_urlparam_split
#define eb_urlparam_format old_eb_urlparam_format
#include "params-old.h"
#include "old/eb-params.c"
#include "old/eb-urlparam.c"
