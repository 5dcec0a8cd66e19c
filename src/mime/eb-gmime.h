/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-gmime.h - g_autoptr support for the GMime 3.2 types extbody uses (GMime
 * 3.2 declares none). Include instead of <gmime/gmime.h>. */
#pragma once
#include <gmime/gmime.h>

G_DEFINE_AUTOPTR_CLEANUP_FUNC (GMimeParser, g_object_unref)
G_DEFINE_AUTOPTR_CLEANUP_FUNC (GMimeStream, g_object_unref)
G_DEFINE_AUTOPTR_CLEANUP_FUNC (GMimeMessage, g_object_unref)
G_DEFINE_AUTOPTR_CLEANUP_FUNC (GMimeObject, g_object_unref)
G_DEFINE_AUTOPTR_CLEANUP_FUNC (GMimePartIter, g_mime_part_iter_free)
