/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* bench-rewrite.c - in-process throughput of eb_rewrite against a GMime
 * parse-and-write round trip of the same messages, measured in the same run.
 *
 *   bench-rewrite [--repeat N] FILE...
 *
 * Every FILE is one message, loaded into memory first. For each of 'extbody'
 * (eb_rewrite to a null stream) and 'gmime' (g_mime_parser_construct_message +
 * g_mime_object_write_to_stream to a null stream) the whole set is processed N
 * times; the best pass counts. Prints MB/s, messages/s and the ratio. Not a test:
 * nothing here asserts a speed. */
#include <gio/gio.h>
#include <gmime/gmime.h>
#include <stdio.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "eb-plan-private.h"

static double
now (void)
{
  return (double) g_get_monotonic_time () / 1e6;
}

/* A GOutputStream that discards, counting bytes. */
static gssize
null_write (GOutputStream *s, const void *b, gsize n, GCancellable *c, GError **e)
{
  return (gssize) n;
}

typedef struct { GOutputStream parent; } NullOut;
typedef struct { GOutputStreamClass parent; } NullOutClass;
G_DEFINE_TYPE (NullOut, null_out, G_TYPE_OUTPUT_STREAM)
static void null_out_class_init (NullOutClass *k) { G_OUTPUT_STREAM_CLASS (k)->write_fn = null_write; }
static void null_out_init (NullOut *s) { }

/* --mbox IN OUT: GMime's own mbox round trip, the baseline for mailbox
 * rewriting: parse IN as an mbox, write every message with its From_ line to
 * OUT, fsync. */
static int
mbox_roundtrip (const char *in, const char *out)
{
  g_mime_init ();
  GMimeStream *is = g_mime_stream_mmap_new (open (in, O_RDONLY), PROT_READ, MAP_PRIVATE);
  int ofd = open (out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  GMimeStream *os = g_mime_stream_fs_new (ofd);
  GMimeParser *p = g_mime_parser_new_with_stream (is);
  g_mime_parser_set_format (p, GMIME_FORMAT_MBOX);
  g_mime_parser_set_persist_stream (p, TRUE);
  guint n = 0;
  while (!g_mime_parser_eos (p)) {
    GMimeMessage *m = g_mime_parser_construct_message (p, NULL);
    if (!m)
      break;
    const char *from = g_mime_parser_get_mbox_marker (p);
    g_mime_stream_printf (os, "%s\n", from ? from : "From -");
    g_mime_object_write_to_stream (GMIME_OBJECT (m), NULL, os);
    g_mime_stream_write_string (os, "\n");
    g_object_unref (m);
    n++;
  }
  g_mime_stream_flush (os);
  fsync (ofd);
  g_object_unref (p);
  g_object_unref (os);
  g_object_unref (is);
  printf ("%u messages\n", n);
  return 0;
}

int
main (int argc, char **argv)
{
  if (argc == 4 && strcmp (argv[1], "--mbox") == 0)
    return mbox_roundtrip (argv[2], argv[3]);
  int repeat = 5;
  int first = 1;
  if (argc > 2 && strcmp (argv[1], "--repeat") == 0) {
    repeat = atoi (argv[2]);
    first = 3;
  }
  if (first >= argc) {
    fprintf (stderr, "usage: bench-rewrite [--repeat N] FILE...\n");
    return 64;
  }
  g_mime_init ();
  GPtrArray *msgs = g_ptr_array_new ();
  guint64 total = 0;
  for (int i = first; i < argc; i++) {
    char *d = NULL;
    gsize n = 0;
    if (!g_file_get_contents (argv[i], &d, &n, NULL))
      continue;
    GByteArray *a = g_byte_array_new_take ((guint8 *) d, n);
    g_ptr_array_add (msgs, a);
    total += n;
  }
  g_autoptr (EbConfig) config = eb_config_new ();
  config->max_message_size = G_GUINT64_CONSTANT (1) << 34;
  GOutputStream *null = g_object_new (null_out_get_type (), NULL);

  double best_eb = 1e30, best_gm = 1e30;
  guint resolved = 0;
  for (int r = 0; r < repeat; r++) {
    double t0 = now ();
    resolved = 0;
    for (guint i = 0; i < msgs->len; i++) {
      EbPlan *res = NULL;
      GByteArray *a = g_ptr_array_index (msgs, i);
      eb_rewrite ((const char *) a->data, a->len, config, NULL, EB_REWRITE_DEFAULT, null, &res, NULL);
      resolved += res->n_resolved;
      eb_plan_free (res);
    }
    best_eb = MIN (best_eb, now () - t0);

    t0 = now ();
    for (guint i = 0; i < msgs->len; i++) {
      GByteArray *a = g_ptr_array_index (msgs, i);
      GMimeStream *st = g_mime_stream_mem_new_with_buffer ((const char *) a->data, a->len);
      GMimeParser *p = g_mime_parser_new_with_stream (st);
      GMimeMessage *m = g_mime_parser_construct_message (p, NULL);
      GMimeStream *out = g_mime_stream_null_new ();
      if (m)
        g_mime_object_write_to_stream (GMIME_OBJECT (m), NULL, out);
      g_clear_object (&m);
      g_object_unref (out);
      g_object_unref (p);
      g_object_unref (st);
    }
    best_gm = MIN (best_gm, now () - t0);
  }
  double mb = (double) total / 1e6;
  printf ("messages %u, %.1f MB, references resolved per pass %u\n", msgs->len, mb, resolved);
  printf ("extbody rewrite: %.3f s  %.1f MB/s  %.0f msg/s\n", best_eb, mb / best_eb, msgs->len / best_eb);
  printf ("gmime roundtrip: %.3f s  %.1f MB/s  %.0f msg/s\n", best_gm, mb / best_gm, msgs->len / best_gm);
  printf ("ratio extbody/gmime throughput: %.2f\n", best_gm / best_eb);
  return 0;
}
