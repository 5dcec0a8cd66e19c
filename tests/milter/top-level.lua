-- SPDX-License-Identifier: LGPL-2.1-or-later
-- The message's own body is the reference: Content-Type and
-- Content-Transfer-Encoding of the top-level header change, Content-ID is added.
local L = dofile(lib .. "/lib.lua")
L.run(function ()
  local conn = L.connect()
  L.begin(conn, { { "From", "a@test.example" }, { "MIME-Version", "1.0" },
                  { "Content-Type", "message/external-body; access-type=URL; URL=\"data:text/html;base64,PGI+aGk8L2I+\"" },
                  { "Content-Transfer-Encoding", "7bit" } })
  L.step(conn, "body", SMFIP_NOBODY, SMFIR_CONTINUE, mt.bodystring,
         "Content-Type: text/html\r\nContent-ID: <top@x>\r\n\r\n")
  L.step(conn, "eom", nil, SMFIR_CONTINUE, mt.eom)
  if not mt.eom_check(conn, MT_HDRCHANGE, "Content-Type") then error("Content-Type not changed") end
  if not mt.eom_check(conn, MT_HDRADD, "Content-ID") then error("Content-ID not added") end
  if not mt.eom_check(conn, MT_HDRADD, "X-Extbody-Resolved") then error("trace field not added") end
  if not mt.eom_check(conn, MT_BODYCHANGE, "<b>hi</b>") then error("body not <b>hi</b>") end
  mt.disconnect(conn)
end)
