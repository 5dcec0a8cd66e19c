/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* resolve-one.c - resolve the references of one message through libextbody's
 * public API.
 *
 *   resolve-one FILE > out.eml
 *
 * Reads the message FILE, resolves its message/external-body references with
 * the default configuration (data: URLs only: fetching is off), writes the
 * message to standard output and one line per reference to standard error.
 * Build it with the Makefile here (pkg-config extbody-2).
 */
#include <extbody/extbody.h>
#include <stdio.h>

static int
resolve_one (const char *path)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *buf = NULL;
  gsize len = 0;
  if (!g_file_get_contents (path, &buf, &len, &error)) {
    fprintf (stderr, "resolve-one: %s\n", error->message);
    return 66;
  }
  /* the defaults: data: URLs are resolved, nothing is fetched */
  g_autoptr (EbConfig) config = eb_config_new ();
  g_autoptr (GOutputStream) out = g_memory_output_stream_new_resizable ();
  g_autoptr (EbPlan) result = NULL;
  if (!eb_rewrite (buf, len, config, NULL, EB_REWRITE_DEFAULT, out, &result, &error)
      || !g_output_stream_close (out, NULL, &error)) {
    fprintf (stderr, "resolve-one: %s\n", error->message);
    return 74;
  }
  GMemoryOutputStream *mem = G_MEMORY_OUTPUT_STREAM (out);
  gsize olen = g_memory_output_stream_get_data_size (mem);
  if (fwrite (g_memory_output_stream_get_data (mem), 1, olen, stdout) != olen || fflush (stdout)) {
    perror ("resolve-one: standard output");
    return 74;
  }

  guint n = eb_plan_get_n_refs (result);
  fprintf (stderr, "libextbody %s: %u reference%s, %u resolved%s\n", eb_get_version_string (), n,
           n == 1 ? "" : "s", eb_plan_get_n_resolved (result),
           eb_plan_get_changed (result) ? "" : ", message unchanged");
  for (guint i = 0; i < n; i++) {
    EbReason reason = eb_plan_get_ref_reason (result, i);
    g_autofree char *url = eb_inspect_printable (eb_plan_get_ref_url (result, i), 60);
    if (reason == EB_REASON_RESOLVED)
      fprintf (stderr, "part %s: %s: resolved (%s, %" G_GUINT64_FORMAT " bytes, %s)\n",
               eb_plan_get_ref_path (result, i), url,
               eb_plan_get_ref_content_type (result, i),
               eb_plan_get_ref_size (result, i),
               eb_plan_get_ref_encoding (result, i));
    else
      fprintf (stderr, "part %s: %s: left: %s (%s)\n", eb_plan_get_ref_path (result, i),
               url, eb_reason_token (reason), eb_reason_text (reason));
  }
  return 0;
}

int
main (int argc, char **argv)
{
  if (argc != 2) {
    fprintf (stderr, "usage: resolve-one FILE\n");
    return 64;
  }
#if !EXTBODY_CHECK_VERSION (0, 1, 0)
#error "resolve-one needs libextbody 0.1.0 or later"
#endif
  eb_init ();
  int status = resolve_one (argv[1]);
  eb_shutdown ();
  return status;
}
