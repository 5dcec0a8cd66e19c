/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* extbody.h - the public API of libextbody: this header includes them all.
 *
 * Everything a program linking libextbody may use is declared in the headers
 * this one includes, one for each area; every other symbol of the library is
 * hidden. Types are opaque, read through accessors. Include this header, not
 * the area headers one by one.
 */
#pragma once
#include <extbody/extbody-base.h>
#include <extbody/extbody-config.h>
#include <extbody/extbody-fetch.h>
#include <extbody/extbody-store.h>
#include <extbody/extbody-plan.h>
#include <extbody/extbody-inspect.h>
#include <extbody/extbody-mime.h>
#include <extbody/extbody-log.h>
#include <extbody/extbody-batch.h>
