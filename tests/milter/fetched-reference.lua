-- SPDX-License-Identifier: LGPL-2.1-or-later
-- A small message whose reference (the URL given as -D url=URL) is fetched:
-- the body is replaced, one trace field added.
local L = dofile(lib .. "/lib.lua")
L.run(function ()
  if url == nil then error("no -D url=URL") end
  local conn = L.connect()
  L.begin(conn, { { "From", "a@test.example" }, { "MIME-Version", "1.0" },
                  { "Content-Type", "multipart/mixed; boundary=b" } })
  L.step(conn, "body", SMFIP_NOBODY, SMFIR_CONTINUE, mt.bodystring,
         "--b\r\nContent-Type: message/external-body; access-type=URL;\r\n" ..
         "\tURL=\"" .. url .. "\"\r\n\r\n" ..
         "Content-Type: application/octet-stream\r\n\r\n--b--\r\n")
  L.step(conn, "eom", nil, SMFIR_CONTINUE, mt.eom)
  if not mt.eom_check(conn, MT_BODYCHANGE) then error("body not replaced") end
  if not mt.eom_check(conn, MT_HDRADD, "X-Extbody") then error("X-Extbody not added") end
  local v = mt.getheader(conn, "X-Extbody", 0)
  if v ~= " resolved 1 of 1 external-body reference" then error("X-Extbody: " .. tostring(v)) end
  mt.disconnect(conn)
end)
