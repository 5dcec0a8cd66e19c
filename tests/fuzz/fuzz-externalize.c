/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fuzz-externalize: a whole message through eb_externalize_plan with a
 * directory store in a private temporary directory and externalize_min_size
 * 16, once as it is and once with the fallback (multipart/alternative), once
 * more under a second configuration (small max_nesting_depth and max_parts,
 * externalize_types narrowed, externalize_retention for the expiration
 * parameter, externalize_fallback = on), then with EB_EXTERNALIZE_NO_STORE. The properties (a broken one is a trap):
 *   - nothing externalized: the output is the input byte for byte;
 *   - otherwise the replaced ranges lie inside the input, in order and not
 *     overlapping; the bytes before the first and after the last are the
 *     input's own, and so is every byte between two of them (the output is
 *     exactly the input with each range replaced by its replacement);
 *   - each stored object holds exactly the part's decoded bytes (its name is
 *     their SHA-256, its size the reference's size);
 *   - the output parses back (eb_message_scan) to the input's own references
 *     and exactly one more per externalized part, whose reassembled URL is the
 *     URL the store gave;
 *   - externalizing the output again changes nothing;
 *   - with EB_EXTERNALIZE_NO_STORE nothing changes and nothing is stored, and
 *     the parts it would externalize are the parts the store run did.
 * The objects are removed after each input; the directory at exit. */
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <gmime/gmime.h>
#include <stdlib.h>
#include <string.h>
#include "eb-config.h"
#include "eb-extref.h"
#include "eb-header.h"
#include "eb-message.h"
#include "eb-plan-private.h"
#include "eb-store.h"
#include "eb-transfer.h"

#define BASE_URL "http://127.0.0.1:8080/fuzz/store/a-somewhat-long-path"

static EbConfig *config, *config2;
static EbStore *store;
static char *dir;

static void
clear_dir (gboolean remove_dir)
{
  if (!dir)
    return;
  GDir *d = g_dir_open (dir, 0, NULL);
  const char *n;
  while (d && (n = g_dir_read_name (d))) {
    char *p = g_build_filename (dir, n, NULL);
    g_unlink (p);
    g_free (p);
  }
  if (d)
    g_dir_close (d);
  if (remove_dir)
    g_rmdir (dir);
}

static void
at_exit (void)
{
  clear_dir (TRUE);
}

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
  eb_init ();
  config = eb_config_new ();
  dir = g_dir_make_tmp ("extbody-fuzz-store-XXXXXX", NULL);
  if (!dir || !eb_config_set (config, "externalize_store", dir, NULL)
      || !eb_config_set (config, "externalize_base_url", BASE_URL, NULL)
      || !eb_config_set (config, "externalize_min_size", "16", NULL))
    abort ();
  store = eb_store_new (config, NULL);
  config2 = eb_config_new ();
  if (!store || !eb_config_set (config2, "externalize_store", dir, NULL)
      || !eb_config_set (config2, "externalize_base_url", BASE_URL, NULL)
      || !eb_config_set (config2, "externalize_min_size", "16", NULL)
      || !eb_config_set (config2, "externalize_types", "application/*, image/png, text/*", NULL)
      || !eb_config_set (config2, "externalize_retention", "30", NULL)
      || !eb_config_set (config2, "externalize_fallback", "on", NULL)
      || !eb_config_set (config2, "max_nesting_depth", "3", NULL)
      || !eb_config_set (config2, "max_parts", "12", NULL))
    abort ();
  atexit (at_exit);
  return 0;
}

static GBytes *
write_plan (const EbPlan *r, const char *buf, gsize len)
{
  GOutputStream *out = g_memory_output_stream_new_resizable ();
  if (!eb_plan_write (r, out, NULL) || !g_output_stream_close (out, NULL, NULL))
    __builtin_trap ();
  GBytes *b = g_memory_output_stream_steal_as_bytes (G_MEMORY_OUTPUT_STREAM (out));
  g_object_unref (out);
  return b;
}

/* The decoded content of the part @ref of @buf, as its own header declares it. */
static GBytes *
decode_part (const char *buf, const EbRef *ref)
{
  const char *cte = NULL;
  char *value = NULL;
  for (guint i = 0; ref->outer && i < ref->outer->fields->len; i++) {
    const EbHeaderField *f = &g_array_index (ref->outer->fields, EbHeaderField, i);
    if (eb_header_field_is (f, buf, "Content-Transfer-Encoding")) {
      if (cte)
        __builtin_trap ();   /* two: never a candidate */
      cte = value = eb_header_field_unfold (f, buf);
    }
  }
  GBytes *raw = g_bytes_new_static (buf + ref->content_start, ref->end - ref->content_start);
  GBytes *d = eb_transfer_decode (eb_transfer_parse_cte (cte), raw, NULL);
  g_bytes_unref (raw);
  g_free (value);
  if (!d)
    __builtin_trap ();   /* externalized, but it does not decode */
  return d;
}

/* The stored object named @sha256: it exists, holds @want, and is named by
 * their digest. */
static void
check_object (const char *sha256, GBytes *want)
{
  char *p = g_build_filename (dir, sha256, NULL);
  char *got = NULL;
  gsize n = 0;
  if (!g_file_get_contents (p, &got, &n, NULL))
    __builtin_trap ();
  gsize wn = 0;
  const char *w = g_bytes_get_data (want, &wn);
  char *sum = g_compute_checksum_for_data (G_CHECKSUM_SHA256, (const guchar *) got, n);
  if (n != wn || (n && memcmp (got, w, n) != 0) || strcmp (sum, sha256) != 0)
    __builtin_trap ();
  g_free (sum);
  g_free (got);
  g_free (p);
}

/* The references a parse of @buf finds, each read (URL reassembled). */
static EbMessageScan *
scan_refs (const char *buf, gsize len)
{
  gsize skip = eb_message_from_line_len (buf, len);
  EbMessageScan *s = eb_message_scan (buf + skip, len - skip, config);
  for (guint i = 0; i < s->refs->len; i++)
    eb_extref_read (g_ptr_array_index (s->refs, i), buf + skip, len - skip);
  return s;
}

static guint
count_url (const EbMessageScan *s, const char *url)
{
  guint n = 0;
  for (guint i = 0; i < s->refs->len; i++) {
    const EbRef *ref = g_ptr_array_index (s->refs, i);
    n += ref->url && strcmp (ref->url, url) == 0;
  }
  return n;
}

/* One run with @flags; returns how many parts were externalized. */
static guint
run (const EbConfig *cfg, const char *data, gsize size, EbExternalizeFlags flags)
{
  EbPlan *r = eb_externalize_plan (data, size, cfg, store, flags);
  if (!r)
    __builtin_trap ();
  GBytes *outb = write_plan (r, data, size);
  gsize n = 0;
  const char *o = g_bytes_get_data (outb, &n);
  guint nres = 0;
  if (r->scan)
    for (guint i = 0; i < r->scan->refs->len; i++) {
      const EbResolution *res = g_ptr_array_index (r->resolutions, i);
      if (res->reason == EB_REASON_STORE_FAILED || res->reason == EB_REASON_WOULD_EXTERNALIZE)
        __builtin_trap ();   /* a private directory store takes everything */
      nres += res->reason == EB_REASON_RESOLVED;
    }
  if (nres != r->n_resolved || (nres > 0) != r->changed)
    __builtin_trap ();
  if (!r->changed) {
    if (n != size || (size && memcmp (o, data, size) != 0))
      __builtin_trap ();
    g_bytes_unref (outb);
    eb_plan_free (r);
    return 0;
  }

  /* the splice: the input with each replaced range replaced, nothing else */
  const char *buf = data + r->message->from_len;
  gsize len = size - r->message->from_len;
  GString *want = g_string_new_len (data, (gssize) r->message->from_len);
  gsize pos = 0;
  for (guint i = 0; i < r->scan->refs->len; i++) {
    const EbRef *ref = g_ptr_array_index (r->scan->refs, i);
    const EbResolution *res = g_ptr_array_index (r->resolutions, i);
    if (res->reason != EB_REASON_RESOLVED)
      continue;
    gsize a = eb_extref_replaced_start (ref), b = eb_extref_replaced_end (ref);
    if (a < pos || b < a || b > len || ref->content_start < a || ref->content_start > b
        || ref->alt || !ref->url || !res->digest || !res->head || res->encoding != EB_OUT_7BIT)
      __builtin_trap ();
    g_string_append_len (want, buf + pos, (gssize) (a - pos));
    g_string_append_len (want, res->head->str, (gssize) res->head->len);
    gsize dl = 0;
    const char *d = g_bytes_get_data (res->data, &dl);
    g_string_append_len (want, d, (gssize) dl);
    pos = b;

    /* the object: the part's decoded bytes under their digest */
    GBytes *decoded = decode_part (buf, ref);
    if (!ref->size || g_ascii_strtoull (ref->size, NULL, 10) != g_bytes_get_size (decoded))
      __builtin_trap ();
    check_object (res->digest, decoded);
    char *url = g_strdup_printf ("%s/%s", BASE_URL, res->digest);
    if (strcmp (url, ref->url) != 0)
      __builtin_trap ();
    g_free (url);
    g_bytes_unref (decoded);
  }
  g_string_append_len (want, buf + pos, (gssize) (len - pos));
  if (want->len != n || memcmp (want->str, o, n) != 0)
    __builtin_trap ();
  g_string_free (want, TRUE);

  /* the output parses back: the input's references, and one per part */
  /* (under the default limits: the fallback adds parts and a level) */
  EbMessageScan *before = scan_refs (data, size);
  EbMessageScan *after = scan_refs (o, n);
  if (after->refs->len != before->refs->len + r->n_resolved)
    __builtin_trap ();
  for (guint i = 0; i < r->scan->refs->len; i++) {
    const EbRef *ref = g_ptr_array_index (r->scan->refs, i);
    const EbResolution *res = g_ptr_array_index (r->resolutions, i);
    if (res->reason != EB_REASON_RESOLVED)
      continue;
    /* a part twice in the message is stored once: one URL, several references */
    guint times = 0;
    for (guint k = 0; k < r->scan->refs->len; k++) {
      const EbRef *o2 = g_ptr_array_index (r->scan->refs, k);
      times += o2->url && strcmp (o2->url, ref->url) == 0;
    }
    if (count_url (after, ref->url) != count_url (before, ref->url) + times)
      __builtin_trap ();
  }
  eb_message_scan_free (before);
  eb_message_scan_free (after);

  /* a second pass over the output changes nothing */
  EbPlan *r2 = eb_externalize_plan (o, n, cfg, store, flags);
  if (r2->changed || r2->n_resolved)
    __builtin_trap ();
  eb_plan_free (r2);

  guint done = r->n_resolved;
  g_bytes_unref (outb);
  eb_plan_free (r);
  return done;
}

int
LLVMFuzzerTestOneInput (const guint8 *data, size_t size)
{
  guint done = run (config, (const char *) data, size, EB_EXTERNALIZE_DEFAULT);
  clear_dir (FALSE);
  run (config, (const char *) data, size, EB_EXTERNALIZE_FALLBACK);
  clear_dir (FALSE);
  run (config2, (const char *) data, size, EB_EXTERNALIZE_DEFAULT);
  clear_dir (FALSE);

  /* decide only: the same parts, nothing stored, nothing changed */
  EbPlan *r = eb_externalize_plan ((const char *) data, size, config, store,
                                            EB_EXTERNALIZE_NO_STORE);
  guint would = 0;
  for (guint i = 0; r->scan && i < r->scan->refs->len; i++) {
    const EbResolution *res = g_ptr_array_index (r->resolutions, i);
    if (res->reason == EB_REASON_RESOLVED)
      __builtin_trap ();
    would += res->reason == EB_REASON_WOULD_EXTERNALIZE;
  }
  if (r->changed || r->n_resolved || would != done)
    __builtin_trap ();
  GBytes *outb = write_plan (r, (const char *) data, size);
  gsize n = 0;
  const void *o = g_bytes_get_data (outb, &n);
  if (n != size || (size && memcmp (o, data, size) != 0))
    __builtin_trap ();
  g_bytes_unref (outb);
  eb_plan_free (r);
  GDir *d = g_dir_open (dir, 0, NULL);
  if (d && g_dir_read_name (d))
    __builtin_trap ();   /* NO_STORE stored something */
  if (d)
    g_dir_close (d);
  return 0;
}
