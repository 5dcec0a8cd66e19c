-- SPDX-License-Identifier: LGPL-2.1-or-later
-- Run against a milter with max_message_size = 2k: a larger body is accepted
-- unchanged as soon as it passes the limit.
local L = dofile(lib .. "/lib.lua")
L.run(function ()
  local conn = L.connect()
  L.begin(conn, { { "From", "a@test.example" }, { "Content-Type", "multipart/mixed; boundary=b" } })
  local big = "--b\r\nContent-Type: message/external-body; access-type=URL; URL=\"data:,x\"\r\n\r\n" ..
              "Content-Type: text/plain\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\n" ..
              string.rep("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\r\n", 40) .. "--b--\r\n"
  L.step(conn, "body", SMFIP_NOBODY, SMFIR_ACCEPT, mt.bodystring, big)
  mt.disconnect(conn)
end)
