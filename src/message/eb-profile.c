/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-profile.c - where a message is (in transit, at rest, given by hand),
 * and the flags its plan is made with: named once, for the daemon's doors,
 * the command and the mailbox runs alike. */
#include "eb-profile.h"

EbRewriteFlags
eb_profile_rewrite_flags (EbProfile profile, const EbConfig *config)
{
  switch (profile) {
  case EB_PROFILE_TRANSIT:
  case EB_PROFILE_TRANSIT_BODY:
    return EB_REWRITE_FILTER_FIELD | (config->strip_trace_fields ? EB_REWRITE_STRIP_TRACE : 0);
  case EB_PROFILE_AT_REST:
    return EB_REWRITE_DROP_CONTENT_LENGTH;
  case EB_PROFILE_AS_GIVEN:
  default:
    return EB_REWRITE_DEFAULT;
  }
}

EbExternalizeFlags
eb_profile_externalize_flags (EbProfile profile, const EbConfig *config)
{
  switch (profile) {
  case EB_PROFILE_TRANSIT:
  case EB_PROFILE_TRANSIT_BODY:
    return EB_EXTERNALIZE_FILTER_FIELD | (config->strip_trace_fields ? EB_EXTERNALIZE_STRIP_TRACE : 0);
  case EB_PROFILE_AT_REST:
    return EB_EXTERNALIZE_DROP_CONTENT_LENGTH;
  case EB_PROFILE_AS_GIVEN:
  default:
    return EB_EXTERNALIZE_DEFAULT;
  }
}
