-- SPDX-License-Identifier: LGPL-2.1-or-later
-- lib.lua - shared steps for extbodyd's miltertest scripts.
-- miltertest -D sock=unix:PATH -D lib=DIR -s SCRIPT.lua
local M = {}

function M.connect()
  local conn = mt.connect(sock, 50, 0.1)
  if conn == nil then error("mt.connect(" .. sock .. ") failed") end
  if not mt.test_action(conn, SMFIF_CHGBODY) then error("no SMFIF_CHGBODY") end
  if not mt.test_action(conn, SMFIF_CHGHDRS) then error("no SMFIF_CHGHDRS") end
  if not mt.test_action(conn, SMFIF_ADDHDRS) then error("no SMFIF_ADDHDRS") end
  return conn
end

-- one protocol step, skipped when the filter opted out of it
function M.step(conn, name, noopt, want, fn, ...)
  if noopt and mt.test_option(conn, noopt) then return end
  local err = fn(conn, ...)
  if err ~= nil then error(name .. "() failed: " .. tostring(err)) end
  local r = mt.getreply(conn)
  if r ~= want then
    error(string.format("%s: reply %q, want %q", name, string.char(r), string.char(want)))
  end
end

-- envelope and headers; returns after EOH with the reply checked against want_eoh
function M.begin(conn, headers, want_eoh)
  mt.macro(conn, SMFIC_MAIL, "i", "4TESTQUEUE")
  M.step(conn, "mailfrom", SMFIP_NOMAIL, SMFIR_CONTINUE, mt.mailfrom, "<a@test.example>")
  M.step(conn, "rcptto", SMFIP_NORCPT, SMFIR_CONTINUE, mt.rcptto, "<b@test.example>")
  for _, h in ipairs(headers) do
    M.step(conn, "header", SMFIP_NOHDRS, SMFIR_CONTINUE, mt.header, h[1], h[2])
  end
  M.step(conn, "eoh", SMFIP_NOEOH, want_eoh or SMFIR_CONTINUE, mt.eoh)
end

function M.run(fn)
  local ok, err = pcall(fn)
  if not ok then
    io.stderr:write("FAIL: " .. tostring(err) .. "\n")
    error(err)
  end
  mt.echo("PASS")
end

return M
