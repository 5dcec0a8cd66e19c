-- SPDX-License-Identifier: LGPL-2.1-or-later
-- Abort in the middle of a message, then a whole message on the same connection.
local L = dofile(lib .. "/lib.lua")
L.run(function ()
  local conn = L.connect()
  L.begin(conn, { { "From", "a@test.example" }, { "Content-Type", "multipart/mixed; boundary=b" } })
  L.step(conn, "body", SMFIP_NOBODY, SMFIR_CONTINUE, mt.bodystring, "--b\r\nContent-Type: message/ext")
  if mt.abort(conn) ~= nil then error("abort failed") end
  L.begin(conn, { { "From", "a@test.example" }, { "Content-Type", "multipart/mixed; boundary=b" } })
  L.step(conn, "body", SMFIP_NOBODY, SMFIR_CONTINUE, mt.bodystring,
         "--b\r\nContent-Type: message/external-body; access-type=URL; URL=\"data:,second\"\r\n\r\n" ..
         "Content-Type: text/plain\r\n\r\n--b--\r\n")
  L.step(conn, "eom", nil, SMFIR_CONTINUE, mt.eom)
  if not mt.eom_check(conn, MT_BODYCHANGE) then error("second message not resolved") end
  mt.disconnect(conn)
end)
