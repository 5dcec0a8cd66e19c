-- SPDX-License-Identifier: LGPL-2.1-or-later
-- A reference whose server refuses the connection (127.0.0.1 port 1, where
-- nothing listens): left as it was, no modification; the daemon's log says why
-- (test-milter /milter/log-detail reads it).
local L = dofile(lib .. "/lib.lua")
L.run(function ()
  local conn = L.connect()
  L.begin(conn, { { "From", "a@test.example" }, { "MIME-Version", "1.0" },
                  { "Message-ID", "<refused@test.example>" },
                  { "Content-Type", "multipart/mixed; boundary=b" } })
  L.step(conn, "body", SMFIP_NOBODY, SMFIR_CONTINUE, mt.bodystring,
         "--b\r\nContent-Type: message/external-body; access-type=URL;\r\n" ..
         "\tURL=\"http://127.0.0.1:1/private/report.pdf?token=s3cr3t\"\r\n\r\n" ..
         "Content-Type: application/pdf\r\n\r\n--b--\r\n")
  L.step(conn, "eom", nil, SMFIR_CONTINUE, mt.eom)
  if mt.eom_check(conn, MT_BODYCHANGE) then error("body changed") end
  mt.disconnect(conn)
end)
