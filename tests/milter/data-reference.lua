-- SPDX-License-Identifier: LGPL-2.1-or-later
-- A data: reference inside a multipart: the body is replaced (CRLF), one trace
-- field added, the top-level header otherwise untouched.
local L = dofile(lib .. "/lib.lua")
L.run(function ()
  local conn = L.connect()
  L.begin(conn, { { "From", "a@test.example" }, { "MIME-Version", "1.0" },
                  { "Content-Type", "multipart/mixed; boundary=b" } })
  L.step(conn, "body", SMFIP_NOBODY, SMFIR_CONTINUE, mt.bodystring,
         "--b\r\nContent-Type: message/external-body; access-type=URL;\r\n" ..
         "\tURL=\"data:text/plain,Hello%2C%20\r\n\tmilter!%0A\"\r\n\r\n" ..
         "Content-Type: text/plain\r\nContent-ID: <h@x>\r\n\r\n--b--\r\n")
  L.step(conn, "eom", nil, SMFIR_CONTINUE, mt.eom)
  local want = "--b\r\nContent-Type: text/plain\r\nContent-ID: <h@x>\r\n" ..
               "Content-Transfer-Encoding: 7bit\r\n" ..
               "X-Extbody-Resolved: access-type=URL; scheme=data; type=\"text/plain\";\r\n" ..
               "\tsize=15; sha256=f3bce30d1e390f99885262c82338a8d8390a5ff8051e13658c0c7fbf84789c53\r\n\r\nHello, milter!\r\n\r\n--b--\r\n"
  if not mt.eom_check(conn, MT_BODYCHANGE, want) then error("body not replaced as expected") end
  if not mt.eom_check(conn, MT_HDRADD, "X-Extbody") then error("X-Extbody not added") end
  local v = mt.getheader(conn, "X-Extbody", 0)
  if v ~= " resolved 1 of 1 external-body reference" then error("X-Extbody: " .. tostring(v)) end
  if mt.eom_check(conn, MT_HDRCHANGE) then error("a header was changed") end
  mt.disconnect(conn)
end)
