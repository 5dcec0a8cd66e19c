-- SPDX-License-Identifier: LGPL-2.1-or-later
-- A text/plain message cannot hold an external-body: accepted at end of header,
-- without its body. A multipart without one: no modification at all.
local L = dofile(lib .. "/lib.lua")
L.run(function ()
  local conn = L.connect()
  L.begin(conn, { { "From", "a@test.example" }, { "Subject", "plain" },
                  { "Content-Type", "text/plain; charset=us-ascii" } }, SMFIR_ACCEPT)
  mt.disconnect(conn)

  conn = L.connect()
  L.begin(conn, { { "From", "a@test.example" }, { "MIME-Version", "1.0" },
                  { "Content-Type", "multipart/mixed; boundary=b" } })
  L.step(conn, "body", SMFIP_NOBODY, SMFIR_CONTINUE, mt.bodystring,
         "--b\r\nContent-Type: text/plain\r\n\r\nno reference here\r\n--b--\r\n")
  L.step(conn, "eom", nil, SMFIR_CONTINUE, mt.eom)
  if mt.eom_check(conn, MT_BODYCHANGE) then error("body changed") end
  if mt.eom_check(conn, MT_HDRADD) then error("header added") end
  if mt.eom_check(conn, MT_HDRCHANGE) then error("header changed") end
  mt.disconnect(conn)
end)
