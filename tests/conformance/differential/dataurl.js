// SPDX-License-Identifier: LGPL-2.1-or-later
// dataurl.js - the second implementation for tests/conformance/test-diff-dataurl.c:
// the jsdom data-urls package (the reference implementation of the WHATWG Fetch
// data: URL processor, on whatwg-url and whatwg-mimetype) under Node.js >= 18.
//
// Framing. Standard input: one JSON string per line (the C side escapes '"',
// '\\' and every code point below U+0020 as \uXXXX, so no line holds a raw
// newline, and U+0000 survives). Standard output: one JSON line per input line,
// in order:
//   null                                  the URL parser or the processor failed
//   {"mimeType": "...", "body": "..."}    the serialized MIME type record and the
//                                         body bytes in base64
//   {"error": "..."}                      data-urls threw (never expected)
//
// Why the raw string goes to data-urls' own parseURL(), not a URL serialized by
// Node first, nor fromURLRecord(): eb_data_url_process() takes the raw string
// and does the URL parser's work itself (strip leading and trailing C0 controls
// and spaces, remove ASCII tab and newline, lowercase the scheme, percent-encode
// per the opaque-path / path / query sets, parse an authority, fail where the URL
// parser fails, exclude the fragment), exactly like test-wpt-dataurl.c, which
// hands the WPT inputs to it unchanged. data-urls' parseURL(string) runs the
// whatwg-url parser (the reference URL parser) and then the processor on the
// serialization with "exclude fragment". So both sides get the same string and
// both do URL parser + serializer + processor: like is compared with like, and
// the URL step is covered by the comparison too. Pre-serializing with Node's own
// URL class would hide that step from the C side and bring in a third
// implementation (Node's ada-based URL), which is not the reference.
"use strict";
// data-urls 5 decodes base64 with the global atob() (Node >= 16; spec-conformant
// forgiving-base64 since Node 18.x): without it every base64 input would differ.
if (typeof globalThis.atob !== "function") {
  process.stderr.write(`dataurl.js: Node.js ${process.version} has no atob(); data-urls 5 needs Node >= 18\n`);
  process.exit(2);
}
const parseDataURL = require("data-urls");

function run(line) {
  let input;
  try {
    input = JSON.parse(line);
  } catch (e) {
    return { error: `bad input line: ${e.message}` };
  }
  if (typeof input !== "string") {
    return { error: "input line is not a JSON string" };
  }
  try {
    const r = parseDataURL(input);
    if (r === null) {
      return null;
    }
    return {
      mimeType: r.mimeType.toString(),
      body: Buffer.from(r.body.buffer, r.body.byteOffset, r.body.byteLength).toString("base64")
    };
  } catch (e) {
    return { error: `data-urls threw: ${e && e.message}` };
  }
}

const chunks = [];
process.stdin.on("data", c => chunks.push(c));
process.stdin.on("end", () => {
  const text = Buffer.concat(chunks).toString("utf8");
  const lines = text.split("\n");
  if (lines.length > 0 && lines[lines.length - 1] === "") {
    lines.pop();
  }
  const out = lines.map(l => JSON.stringify(run(l)));
  process.stdout.write(out.length ? `${out.join("\n")}\n` : "");
});
