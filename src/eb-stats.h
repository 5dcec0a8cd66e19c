/* eb-stats.h - counters over many messages (the public part is in
 * <extbody/extbody.h>, "batch and statistics").
 *
 * Counted under one lock, so workers of a batch and the milter's sessions
 * count into the same EbStats. A message not even parsed (above
 * max_message_size) counts its own reason once among those left, as the
 * summary always has.
 */
#pragma once
#include "eb-reason.h"
#include "eb-rewrite.h"
#include <extbody/extbody.h>
