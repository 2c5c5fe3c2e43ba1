-- Wireshark dissector for psb, the parameter-server wire protocol (docs/PROTOCOL.md).
--
--   tshark -X lua_script:scripts/psb.lua -r capture.pcap
--   wireshark -X lua_script:scripts/psb.lua capture.pcap
--
-- Or copy it into the personal Lua plugins folder. Needs Wireshark >= 4.0 (Lua 5.2);
-- it uses no bit operators or library so that it also loads under Lua 5.3/5.4.

local psb = Proto("psb", "psb parameter-server protocol")

local HDR_LEN = 40
local MAGIC = 0x5053
local VERSION = 1
local MAX_VALUE = 1073741824	-- PSB_MAX_VALUE, 1 GiB
local DEFAULT_PORT = 9430
local DEFAULT_SCHED_PORT = 9431
local MAX_FLOAT_ITEMS = 16	-- individual floats shown per segment
local MAX_FRAME = 9216		-- PSB_MAX_FRAME: psb's receive buffers; longer frames are dropped
local ECHO_MAX_LEN = 1024	-- PSB_ECHO_MAX_LEN: the longest ECHO psb answers

-- enum psb_msg_type
local T_PUSH, T_PULL, T_PUSHPULL, T_BATCH, T_REPAIR = 0x01, 0x02, 0x03, 0x04, 0x05
local T_REGISTER, T_BARRIER, T_BYE, T_FINALIZE, T_HEARTBEAT = 0x10, 0x11, 0x12, 0x13, 0x14
local T_ECHO, T_ECHO_RESP = 0x15, 0x95
local T_PUSH_ACK, T_PULL_RESP, T_PUSHPULL_RESP, T_BATCH_RESP = 0x81, 0x82, 0x83, 0x84
local T_REPAIR_RESP = 0x85
local T_REGISTER_ACK, T_BARRIER_ACK, T_FINALIZE_ACK, T_HEARTBEAT_ACK = 0x90, 0x91, 0x93, 0x94
local T_ERROR = 0xff

local type_names = {
	[T_PUSH] = "PUSH",
	[T_PULL] = "PULL",
	[T_PUSHPULL] = "PUSHPULL",
	[T_BATCH] = "BATCH",
	[T_REPAIR] = "REPAIR",
	[T_REGISTER] = "REGISTER",
	[T_BARRIER] = "BARRIER",
	[T_BYE] = "BYE",
	[T_FINALIZE] = "FINALIZE",
	[T_HEARTBEAT] = "HEARTBEAT",
	[T_ECHO] = "ECHO",
	[T_PUSH_ACK] = "PUSH_ACK",
	[T_PULL_RESP] = "PULL_RESP",
	[T_PUSHPULL_RESP] = "PUSHPULL_RESP",
	[T_BATCH_RESP] = "BATCH_RESP",
	[T_REPAIR_RESP] = "REPAIR_RESP",
	[T_REGISTER_ACK] = "REGISTER_ACK",
	[T_BARRIER_ACK] = "BARRIER_ACK",
	[T_FINALIZE_ACK] = "FINALIZE_ACK",
	[T_HEARTBEAT_ACK] = "HEARTBEAT_ACK",
	[T_ECHO_RESP] = "ECHO_RESP",
	[T_ERROR] = "ERROR",
}

-- enum psb_status, named as psb_status_name() names them in psb's logs and counters.
local status_names = {
	[0] = "ok",
	[1] = "bad_version",
	[2] = "bad_type",
	[3] = "length_mismatch",
	[4] = "no_key",
	[5] = "too_large",
	[6] = "no_memory",
	[7] = "bad_sender",
	[8] = "stale",
	[9] = "busy",
}

-- Messages whose payload is a slice of a little-endian float32 value.
local carries_floats = {
	[T_PUSH] = true, [T_PUSHPULL] = true, [T_PULL_RESP] = true, [T_PUSHPULL_RESP] = true,
}

-- Messages addressed by key and request id (the rest are scheduler messages).
local keyed = {
	[T_PUSH] = true, [T_PULL] = true, [T_PUSHPULL] = true,
	[T_PUSH_ACK] = true, [T_PULL_RESP] = true, [T_PUSHPULL_RESP] = true, [T_ERROR] = true,
	[T_REPAIR] = true, [T_REPAIR_RESP] = true,
}

-- Scheduler messages whose flags say server or worker (the node's role).
local names_role = {
	[T_REGISTER] = true, [T_REGISTER_ACK] = true, [T_HEARTBEAT] = true,
	[T_HEARTBEAT_ACK] = true,
}

-- A server's answers other than ERROR: aux is its epoch (random, nonzero, fixed for the
-- life of the process; 0: a server that does not say).
local carries_epoch = {
	[T_PUSH_ACK] = true, [T_PULL_RESP] = true, [T_PUSHPULL_RESP] = true,
	[T_BATCH_RESP] = true, [T_REPAIR_RESP] = true,
}

-- struct psb_repair flags
local R_ALL, R_ROUND = 0x01, 0x02

-- HEARTBEAT_ACK payload (psb_sched_lost_encode): u16 count, u16 0, count 16-byte entries.
local LOST_MAX = 64		-- PSB_SCHED_LOST_MAX
local LOST_ENTRY = 16		-- PSB_SCHED_LOST_ENTRY
local LOST_INFO = 8		-- lost servers named in the Info column; the rest are counted
local LOST_DEAD, LOST_RESTARTED = 1, 2
local lost_why_names = {
	[LOST_DEAD] = "dead",			-- silent too long
	[LOST_RESTARTED] = "restarted",		-- registered again from a new process
}

local F_SYNC, F_SERVER, F_WORKER, F_BEATS = 0x01, 0x02, 0x04, 0x10

-- Every field, in the order Wireshark lists them; pf.KEY is the field.
local pf, fields = {}, {}
local function field(key, f)
	pf[key] = f
	table.insert(fields, f)
end

field("magic", ProtoField.uint16("psb.magic", "Magic", base.HEX))
field("version", ProtoField.uint8("psb.version", "Version", base.DEC))
field("type", ProtoField.uint8("psb.type", "Type", base.HEX, type_names))
field("flags", ProtoField.uint8("psb.flags", "Flags", base.HEX))
field("flag_sync", ProtoField.bool("psb.flags.sync", "Sync", 8, nil, F_SYNC,
	"Request belongs to a synchronous round"))
field("flag_server", ProtoField.bool("psb.flags.server", "Server", 8, nil, F_SERVER,
	"REGISTER: the node is a server"))
field("flag_worker", ProtoField.bool("psb.flags.worker", "Worker", 8, nil, F_WORKER,
	"REGISTER: the node is a worker"))
field("flag_beats", ProtoField.bool("psb.flags.beats", "Beats", 8, nil, F_BEATS,
	"REGISTER: the node sends HEARTBEATs; the scheduler watches it"))
field("status", ProtoField.uint8("psb.status", "Status", base.DEC, status_names))
field("sender", ProtoField.uint16("psb.sender", "Sender", base.DEC))
field("req_id", ProtoField.uint32("psb.req_id", "Request id", base.DEC))
field("round", ProtoField.uint32("psb.round", "Round", base.DEC))
field("key", ProtoField.uint64("psb.key", "Key", base.DEC))
field("total_len", ProtoField.uint32("psb.total_len", "Total length", base.DEC))
field("offset", ProtoField.uint32("psb.offset", "Offset", base.DEC))
field("seg_len", ProtoField.uint16("psb.seg_len", "Segment length", base.DEC))
field("seg_size", ProtoField.uint16("psb.seg_size", "Segment size", base.DEC))
field("aux", ProtoField.uint32("psb.aux", "Aux", base.DEC))
field("epoch", ProtoField.uint32("psb.epoch", "Server epoch", base.HEX, nil, nil,
	"aux of a server's answer: changes when the server restarts (0: not said)"))
field("value", ProtoField.bytes("psb.value", "Value"))
field("nfloats", ProtoField.uint32("psb.nfloats", "Floats in segment", base.DEC))
field("float", ProtoField.float("psb.float", "Float"))
-- REGISTER_ACK payload: the scheduler's server table.
field("num_servers", ProtoField.uint16("psb.sched.num_servers", "Servers", base.DEC))
field("num_workers", ProtoField.uint16("psb.sched.num_workers", "Workers", base.DEC))
field("srv_ip", ProtoField.ipv4("psb.sched.server_ip", "Server address"))
field("srv_port", ProtoField.uint16("psb.sched.server_port", "Server port", base.DEC))
field("key_begin", ProtoField.uint64("psb.sched.key_begin", "First key", base.DEC))
field("key_end", ProtoField.uint64("psb.sched.key_end", "Key end", base.DEC))
-- REPAIR / REPAIR_RESP payload: which segments are missing.
field("rep_type", ProtoField.uint8("psb.repair.req_type", "Request type", base.HEX, type_names))
field("rep_flags", ProtoField.uint8("psb.repair.flags", "Repair flags", base.HEX))
field("rep_all", ProtoField.bool("psb.repair.all", "All", 8, nil, R_ALL,
	"REPAIR_RESP: the server knows nothing of the request; it is sent again whole"))
field("rep_with_round", ProtoField.bool("psb.repair.has_round", "Has round", 8, nil, R_ROUND,
	"REPAIR: the worker has begun the answer of version `round`"))
field("rep_base", ProtoField.uint32("psb.repair.base", "First segment", base.DEC))
field("rep_nbits", ProtoField.uint32("psb.repair.nbits", "Segments covered", base.DEC))
field("rep_round", ProtoField.uint32("psb.repair.round", "Answer version", base.DEC))
field("rep_missing", ProtoField.uint32("psb.repair.missing", "Segments missing", base.DEC))
-- HEARTBEAT_ACK payload: the servers the job lost.
field("lost_count", ProtoField.uint16("psb.lost.count", "Entries", base.DEC))
field("lost_rank", ProtoField.uint16("psb.lost.rank", "Server rank", base.DEC))
field("lost_why", ProtoField.uint8("psb.lost.why", "Why", base.DEC, lost_why_names))
field("lost_ip", ProtoField.ipv4("psb.lost.ip", "Server address"))
field("lost_port", ProtoField.uint16("psb.lost.port", "Server port", base.DEC))
field("lost_silent", ProtoField.uint32("psb.lost.silent_ms", "Silent (ms)", base.DEC, nil, nil,
	"dead: how long the server had been silent; 0 for restarted"))
psb.fields = fields

-- Where the fields of each record are: key in pf, byte offset, length.
local HDR = {		-- struct psb_hdr
	{ "magic", 0, 2 }, { "version", 2, 1 }, { "type", 3, 1 }, { "flags", 4, 1 },
	{ "status", 5, 1 }, { "sender", 6, 2 }, { "req_id", 8, 4 }, { "round", 12, 4 },
	{ "key", 16, 8 }, { "total_len", 24, 4 }, { "offset", 28, 4 }, { "seg_len", 32, 2 },
	{ "seg_size", 34, 2 }, { "aux", 36, 4 },
}
local HDR_FLAGS = { "flag_sync", "flag_server", "flag_worker", "flag_beats" }
local SERVER = {	-- an entry of the REGISTER_ACK's server table
	{ "srv_ip", 0, 4 }, { "srv_port", 4, 2 }, { "key_begin", 8, 8 }, { "key_end", 16, 8 },
}
local REPAIR = {	-- struct psb_repair
	{ "rep_type", 0, 1 }, { "rep_flags", 1, 1 }, { "rep_base", 4, 4 }, { "rep_nbits", 8, 4 },
	{ "rep_round", 12, 4 },
}
local REPAIR_FLAGS = { "rep_all", "rep_with_round" }
local LOST = {		-- an entry of the HEARTBEAT_ACK's lost-server list
	{ "lost_rank", 0, 2 }, { "lost_why", 2, 1 }, { "lost_ip", 4, 4 }, { "lost_port", 8, 2 },
	{ "lost_silent", 12, 4 },
}

-- The expert infos: key, filter name, text, group, severity.
local ex, experts = {}, {}
for _, e in ipairs({
	{ "short", "psb.short", "Shorter than the 40-byte psb header", "MALFORMED", "ERROR" },
	{ "bad_magic", "psb.bad_magic", "Bad psb magic (psb drops the frame)", "MALFORMED",
		"ERROR" },
	{ "seg_len", "psb.seg_len_mismatch",
		"seg_len does not match the payload length (psb drops the frame)", "MALFORMED",
		"ERROR" },
	{ "segment", "psb.bad_segment", "Segment fields inconsistent (psb drops the frame)",
		"MALFORMED", "ERROR" },
	{ "version", "psb.foreign_version",
		"Unsupported version (psb answers with ERROR bad_version)", "PROTOCOL", "WARN" },
	{ "error", "psb.error", "psb ERROR response", "RESPONSE_CODE", "NOTE" },
	{ "table", "psb.bad_table", "Server table shorter than its count", "MALFORMED", "WARN" },
	{ "oversize", "psb.oversize",
		"Frame longer than psb's 9216-byte receive buffers (psb drops it: oversize)",
		"MALFORMED", "ERROR" },
	{ "repair", "psb.bad_repair",
		"Repair bitmap longer than the message (psb counts it: repair_bad)", "MALFORMED",
		"WARN" },
	{ "lost", "psb.bad_lost",
		"Lost-server list malformed (a psb worker ignores the HEARTBEAT_ACK)", "MALFORMED",
		"WARN" },
	{ "echo", "psb.echo_refused",
		"ECHO longer than 1024 bytes or not one whole segment (psb does not answer it: " ..
		"echo refused)", "PROTOCOL", "WARN" },
}) do
	ex[e[1]] = ProtoExpert.new(e[2], e[3], expert.group[e[4]], expert.severity[e[5]])
	table.insert(experts, ex[e[1]])
end
psb.experts = experts

psb.prefs.port = Pref.uint("Data UDP port", DEFAULT_PORT, "UDP port of psb servers and workers")
psb.prefs.sched_port = Pref.uint("Scheduler UDP port", DEFAULT_SCHED_PORT,
	"UDP port of the psb scheduler (0: none)")

-- Mirror of psb_hdr_check_segment: nil when consistent, else why not.
local function segment_problem(total, offset, seg_len, seg_size)
	if total == 0 then
		if seg_len ~= 0 or offset ~= 0 then
			return "an empty value must have seg_len 0 and offset 0"
		end
		return nil
	end
	if total > MAX_VALUE then
		return "total_len above 1 GiB"
	end
	if seg_size == 0 or seg_size % 4 ~= 0 then
		return "seg_size is not a non-zero multiple of 4"
	end
	if offset >= total then
		return "offset at or past total_len"
	end
	if offset % seg_size ~= 0 then
		return "offset is not a multiple of seg_size"
	end
	local want = math.min(seg_size, total - offset)
	if seg_len ~= want then
		return string.format("seg_len should be %d at this offset", want)
	end
	return nil
end

local function has_flag(flags, mask)
	return math.floor(flags / mask) % 2 == 1
end

-- Adds to tree the fields of the record at off in tvb that layout places (HDR, SERVER, ...);
-- returns their values and their tree items, by key.
local function add_record(tree, tvb, off, layout)
	local v, items = {}, {}
	for _, f in ipairs(layout) do
		local r = tvb(off + f[2], f[3])
		v[f[1]] = f[3] == 8 and r:uint64() or r:uint()
		items[f[1]] = tree:add(pf[f[1]], r)
	end
	return v, items
end

-- Adds the bits of a flags byte (keys in pf) under its item.
local function add_bits(item, r, keys)
	for _, k in ipairs(keys) do
		item:add(pf[k], r)
	end
end

-- A payload shorter than min bytes: true, with the expert info e (and its text) under tree.
local function short(tvb, tree, min, e, text)
	if tvb:len() >= min then
		return false
	end
	if text == nil then	-- the expert's own text (nil is not taken for "none")
		tree:add_tvb_expert_info(e, tvb)
	else
		tree:add_tvb_expert_info(e, tvb, text)
	end
	return true
end

local function dissect_table(tvb, tree)
	local len = tvb:len()
	if short(tvb, tree, 4, ex.table) then
		return
	end
	local n = tvb(0, 2):uint()
	local t = tree:add(tvb(), "Server table")
	t:add(pf.num_servers, tvb(0, 2))
	t:add(pf.num_workers, tvb(2, 2))
	for i = 0, n - 1 do
		local off = 4 + i * 24
		if off + 24 > len then
			t:add_tvb_expert_info(ex.table, tvb)
			break
		end
		add_record(t:add(tvb(off, 24), string.format("Server %d", i)), tvb, off, SERVER)
	end
end

-- REPAIR / REPAIR_RESP: 16-byte record, then bit i (byte i / 8, bit i % 8) for segment
-- base + i. Returns a text for the Info column.
local function dissect_repair(tvb, t)
	local len = tvb:len()
	if short(tvb, t, 16, ex.repair) then
		return " [short repair]"
	end
	local r, items = add_record(t, tvb, 0, REPAIR)
	local b, nbits = r.rep_base, r.rep_nbits
	add_bits(items.rep_flags, tvb(1, 1), REPAIR_FLAGS)
	if has_flag(r.rep_flags, R_ALL) then
		return " all"
	end
	if 16 + math.floor((nbits + 7) / 8) > len then
		t:add_tvb_expert_info(ex.repair, tvb)
		return " [bad bitmap]"
	end
	local missing = 0
	for i = 0, nbits - 1 do
		local byte = tvb(16 + math.floor(i / 8), 1):uint()
		if math.floor(byte / 2 ^ (i % 8)) % 2 == 1 then
			missing = missing + 1
		end
	end
	t:add(pf.rep_missing, missing):set_generated()
	if nbits == 0 then
		return " missing=all"
	end
	return string.format(" missing=%d in %d-%d", missing, b, b + nbits - 1)
end

-- HEARTBEAT_ACK: u16 count (at most 64), u16 0, then count 16-byte entries: u16 rank,
-- u8 why, u8 0, u32 IPv4 address, u16 port, u16 0, u32 silent_ms. Mirror of
-- psb_sched_lost_decode, which refuses the whole list when anything is wrong. total: aux,
-- the servers lost in all (more than the list holds past 64). Returns a text for the Info
-- column.
local function dissect_lost(tvb, t, total)
	local len = tvb:len()
	local ignored = " (a psb worker ignores the HEARTBEAT_ACK)"
	if short(tvb, t, 4, ex.lost, "Lost-server list shorter than 4 bytes" .. ignored) then
		return " [short lost list]"
	end
	local n = tvb(0, 2):uint()
	local l = t:add(tvb(), "Lost servers")
	local ci = l:add(pf.lost_count, tvb(0, 2))
	local bad = nil
	if n > LOST_MAX then
		ci:add_tvb_expert_info(ex.lost, tvb(0, 2),
			string.format("Lost-server list of more than %d entries", LOST_MAX) .. ignored)
		bad = " [bad lost list]"
	end
	local items = {}
	for i = 0, math.min(n, LOST_MAX) - 1 do
		local off = 4 + i * LOST_ENTRY
		if off + LOST_ENTRY > len then
			l:add_tvb_expert_info(ex.lost, tvb,
				"Lost-server list shorter than its count" .. ignored)
			bad = bad or " [short lost list]"
			break
		end
		local e = l:add(tvb(off, LOST_ENTRY), "Lost")
		local v, fi = add_record(e, tvb, off, LOST)
		local why = v.lost_why
		local text = string.format("server %d %s:%d %s", v.lost_rank,
			tostring(tvb(off + 4, 4):ipv4()), v.lost_port,
			lost_why_names[why] or string.format("why=%d", why))
		if why == LOST_DEAD then
			text = text .. string.format(" after %dms", v.lost_silent)
		end
		e:append_text(" " .. text)
		if lost_why_names[why] == nil then
			fi.lost_why:add_tvb_expert_info(ex.lost, tvb(off + 2, 1),
				string.format("Lost server with unknown reason %d", why) .. ignored)
			bad = bad or " [bad lost list]"
		end
		table.insert(items, text)
	end
	local info = ""
	if #items > LOST_INFO then
		local more = #items - LOST_INFO
		info = ": " .. table.concat(items, ", ", 1, LOST_INFO) ..
			string.format(", +%d more", more)
	elseif #items > 0 then
		info = ": " .. table.concat(items, ", ")
	end
	if bad ~= nil then
		return info .. bad
	end
	if n ~= total then
		info = info .. string.format(" (%d listed)", n)
	end
	return info
end

function psb.dissector(tvb, pinfo, tree)
	local len = tvb:len()
	pinfo.cols.protocol = "psb"
	local root = tree:add(psb, tvb())
	local oversize = pinfo.len > MAX_FRAME
	if oversize then
		root:add_proto_expert_info(ex.oversize)
	end
	if len < HDR_LEN then
		root:add_tvb_expert_info(ex.short, tvb())
		pinfo.cols.info = string.format("psb truncated (%d bytes)", len)
		return len
	end

	local h, hi = add_record(root, tvb, 0, HDR)
	local magic, version, mtype, flags, aux = h.magic, h.version, h.type, h.flags, h.aux
	local req_id, round, key, total = h.req_id, h.round, h.key, h.total_len
	local offset, seg_len = h.offset, h.seg_len
	local plen = len - HDR_LEN

	add_bits(hi.flags, tvb(4, 1), HDR_FLAGS)
	if magic ~= MAGIC then
		hi.magic:add_proto_expert_info(ex.bad_magic)
	end
	if version ~= VERSION then
		hi.version:add_proto_expert_info(ex.version)
	end
	if mtype == T_ERROR then
		hi.status:add_proto_expert_info(ex.error)
	end
	if seg_len ~= plen then
		hi.seg_len:add_proto_expert_info(ex.seg_len)
	elseif version == VERSION then
		-- psb checks the segment fields only for its own version.
		local why = segment_problem(total, offset, seg_len, h.seg_size)
		if why ~= nil then
			hi.seg_len:add_proto_expert_info(ex.segment, why)
		end
	end
	if carries_epoch[mtype] then
		local ei = root:add(pf.epoch, tvb(36, 4))
		if aux == 0 then
			ei:append_text(" (the server does not say)")
		end
	end

	if mtype == T_ECHO and version == VERSION and
			(seg_len > ECHO_MAX_LEN or total ~= seg_len or offset ~= 0) then
		root:add_proto_expert_info(ex.echo)
	end

	local rtext = ""
	if plen > 0 then
		local payload = tvb(HDR_LEN, plen)
		root:add(pf.value, payload)
		if carries_floats[mtype] then
			local n = math.floor(plen / 4)
			root:add(pf.nfloats, n):set_generated()
			for i = 0, math.min(n, MAX_FLOAT_ITEMS) - 1 do
				root:add_le(pf.float, tvb(HDR_LEN + 4 * i, 4))
			end
		elseif mtype == T_REGISTER_ACK then
			dissect_table(payload:tvb(), root)
		elseif mtype == T_REPAIR or mtype == T_REPAIR_RESP then
			rtext = dissect_repair(payload:tvb(), root)
		elseif mtype == T_HEARTBEAT_ACK then
			rtext = dissect_lost(payload:tvb(), root, aux)
		end
	elseif mtype == T_HEARTBEAT_ACK then
		root:add_tvb_expert_info(ex.lost, tvb(),
			"Lost-server list missing (a psb worker ignores the HEARTBEAT_ACK)")
		rtext = " [short lost list]"
	end

	-- Info column, e.g. "PUSH key=7 req=3 seg 0-1432/4096",
	-- "HEARTBEAT_ACK worker lost=1: server 1 198.18.0.3:9440 dead after 3100ms".
	local name = type_names[mtype] or string.format("type=0x%02x", mtype)
	local info = name
	if magic ~= MAGIC then
		info = "[bad magic] " .. info
	end
	if oversize then
		info = "[oversize] " .. info
	end
	if keyed[mtype] or type_names[mtype] == nil then
		info = info .. string.format(" key=%s req=%d", tostring(key), req_id)
	elseif names_role[mtype] then
		if has_flag(flags, F_SERVER) then
			info = info .. " server"
		elseif has_flag(flags, F_WORKER) then
			info = info .. " worker"
		end
		if mtype == T_REGISTER and has_flag(flags, F_BEATS) then
			info = info .. " beats"
		elseif mtype == T_REGISTER_ACK then
			info = info .. string.format(" rank=%d", aux)
		elseif mtype == T_HEARTBEAT then
			info = info .. string.format(" period=%dms", aux)
		end
		if mtype == T_HEARTBEAT_ACK then
			-- aux: servers lost in all; the payload lists at most 64 of them.
			info = info .. string.format(" lost=%d", aux)
		else
			info = info .. string.format(" req=%d", req_id)
		end
	elseif carries_epoch[mtype] or mtype == T_ECHO or mtype == T_ECHO_RESP then
		info = info .. string.format(" req=%d", req_id)
	else
		info = info .. string.format(" group=%d seq=%d req=%d", aux, round, req_id)
	end
	if carries_epoch[mtype] and aux ~= 0 then
		info = info .. string.format(" epoch=0x%08x", aux)
	end
	if rtext ~= "" then
		info = info .. rtext
	elseif total > 0 and mtype ~= T_HEARTBEAT_ACK then
		info = info .. string.format(" seg %d-%d/%d", offset, offset + seg_len, total)
	end
	if mtype == T_ERROR then
		info = info .. " status=" .. (status_names[h.status] or tostring(h.status))
	end
	if version ~= VERSION then
		info = info .. string.format(" version=%d", version)
	end
	pinfo.cols.info = info
	root:append_text(", " .. info)
	return len
end

-- Ports currently registered, so that a preference change can move them.
local udp_table = DissectorTable.get("udp.port")
local registered = {}

local function register_ports()
	for _, p in ipairs(registered) do
		udp_table:remove(p, psb)
	end
	registered = {}
	for _, p in ipairs({ psb.prefs.port, psb.prefs.sched_port }) do
		if p ~= 0 then
			udp_table:add(p, psb)
			table.insert(registered, p)
		end
	end
end

function psb.prefs_changed()
	register_ports()
end

register_ports()
udp_table:add_for_decode_as(psb)

-- ---------------------------------------------------------------------------------------
-- psb's reliable multicast of parameter versions (multicast/psb_mc_proto.h) and the
-- staleness experiment's control messages (multicast/psb_stale.h), on whatever UDP ports
-- their senders chose: found by their magic and wire version (heuristic dissectors).

local psbmc = Proto("psbmc", "psb reliable multicast")
local MC_MAGIC, MC_HLEN, MC_ENTRY = 0x504d, 40, 16
-- PSB_MC_WIRE_VERSION; wire version 1 carried another CRC and is shown, flagged
local MC_WIRE_VERSION = 2
local MC_DATA, MC_PARITY, MC_HEARTBEAT, MC_NACK, MC_NCF = 1, 2, 3, 4, 5
local mc_type_names = {
	[MC_DATA] = "DATA", [MC_PARITY] = "PARITY", [MC_HEARTBEAT] = "HEARTBEAT",
	[MC_NACK] = "NACK", [MC_NCF] = "NCF",
}
local mf = {
	magic = ProtoField.uint16("psbmc.magic", "Magic", base.HEX),
	wver = ProtoField.uint8("psbmc.version", "Wire version", base.DEC),
	type = ProtoField.uint8("psbmc.type", "Type", base.DEC, mc_type_names),
	session = ProtoField.uint32("psbmc.session", "Session", base.HEX),
	vid = ProtoField.uint32("psbmc.vid", "Version", base.DEC),
	nseg = ProtoField.uint32("psbmc.nseg", "Segments", base.DEC),
	total_len = ProtoField.uint64("psbmc.total_len", "Version length", base.DEC),
	crc = ProtoField.uint32("psbmc.crc", "CRC-32C of the version", base.HEX),
	group = ProtoField.uint16("psbmc.group", "Group size (k)", base.DEC),
	seg_size = ProtoField.uint16("psbmc.seg_size", "Segment size", base.DEC),
	seg = ProtoField.uint32("psbmc.seg", "Segment", base.DEC),
	len = ProtoField.uint16("psbmc.len", "Length", base.DEC),
	gidx = ProtoField.uint32("psbmc.group_index", "Group", base.DEC),
	pidx = ProtoField.uint16("psbmc.parity_index", "Parity index", base.DEC),
	sent = ProtoField.uint32("psbmc.sent", "Segments sent", base.DEC),
	rate = ProtoField.uint32("psbmc.rate_mbps", "Rate (Mbit/s)", base.DEC),
	receiver = ProtoField.uint32("psbmc.receiver", "Receiver", base.DEC),
	entries = ProtoField.uint16("psbmc.entries", "Entries", base.DEC),
	e_group = ProtoField.uint32("psbmc.entry.group", "Group", base.DEC),
	e_need = ProtoField.uint16("psbmc.entry.need", "Symbols needed", base.DEC),
	e_missing = ProtoField.uint64("psbmc.entry.missing", "Missing segments", base.HEX),
	payload = ProtoField.bytes("psbmc.payload", "Payload"),
}
psbmc.fields = { mf.magic, mf.wver, mf.type, mf.session, mf.vid, mf.nseg, mf.total_len, mf.crc,
	mf.group, mf.seg_size, mf.seg, mf.len, mf.gidx, mf.pidx, mf.sent, mf.rate, mf.receiver,
	mf.entries, mf.e_group, mf.e_need, mf.e_missing, mf.payload }
local ex_mc_len = ProtoExpert.new("psbmc.length", "Length does not match the packet "
	.. "(a receiver drops it)", expert.group.MALFORMED, expert.severity.ERROR)
local ex_mc_type = ProtoExpert.new("psbmc.bad_type", "Unknown type (a receiver drops it)",
	expert.group.MALFORMED, expert.severity.ERROR)
local ex_mc_wire = ProtoExpert.new("psbmc.wire_version", "Wire version 1, whose CRC is not "
	.. "CRC-32C (a receiver of wire version 2 drops it)", expert.group.PROTOCOL,
	expert.severity.WARN)
psbmc.experts = { ex_mc_len, ex_mc_type, ex_mc_wire }

local function mc_dissect(tvb, pinfo, tree)
	local len = tvb:len()
	local wver = len >= MC_HLEN and tvb(2, 1):uint()
	if len < MC_HLEN or tvb(0, 2):uint() ~= MC_MAGIC or
		(wver ~= MC_WIRE_VERSION and wver ~= 1) then
		return false
	end
	pinfo.cols.protocol = "psbmc"
	local t = tree:add(psbmc, tvb())
	local mtype, vid = tvb(3, 1):uint(), tvb(8, 4):uint()
	t:add(mf.magic, tvb(0, 2))
	local wi = t:add(mf.wver, tvb(2, 1))
	if wver ~= MC_WIRE_VERSION then wi:add_proto_expert_info(ex_mc_wire) end
	local ti = t:add(mf.type, tvb(3, 1))
	t:add(mf.session, tvb(4, 4))
	t:add(mf.vid, tvb(8, 4))
	t:add(mf.nseg, tvb(12, 4))
	t:add(mf.total_len, tvb(16, 8))
	t:add(mf.crc, tvb(24, 4))
	t:add(mf.group, tvb(28, 2))
	t:add(mf.seg_size, tvb(30, 2))
	local info = (mc_type_names[mtype] or string.format("type=%d", mtype)) ..
		string.format(" v%d session=0x%08x", vid, tvb(4, 4):uint())
	local want = MC_HLEN
	if mtype == MC_DATA then
		local li = t:add(mf.len, tvb(36, 2))
		t:add(mf.seg, tvb(32, 4))
		want = MC_HLEN + tvb(36, 2):uint()
		info = info .. string.format(" seg %d/%d len %d", tvb(32, 4):uint(), tvb(12, 4):uint(),
			tvb(36, 2):uint())
		if len ~= want then li:add_proto_expert_info(ex_mc_len) end
	elseif mtype == MC_PARITY then
		t:add(mf.gidx, tvb(32, 4))
		t:add(mf.pidx, tvb(36, 2))
		local li = t:add(mf.len, tvb(38, 2))
		want = MC_HLEN + tvb(38, 2):uint()
		info = info .. string.format(" group %d parity %d", tvb(32, 4):uint(), tvb(36, 2):uint())
		if len ~= want then li:add_proto_expert_info(ex_mc_len) end
	elseif mtype == MC_HEARTBEAT then
		t:add(mf.sent, tvb(32, 4))
		t:add(mf.rate, tvb(36, 4))
		info = info .. string.format(" sent %d/%d at %d Mbit/s", tvb(32, 4):uint(),
			tvb(12, 4):uint(), tvb(36, 4):uint())
	elseif mtype == MC_NACK or mtype == MC_NCF then
		local n = tvb(36, 2):uint()
		if mtype == MC_NACK then t:add(mf.receiver, tvb(32, 4)) end
		local ni = t:add(mf.entries, tvb(36, 2))
		want = MC_HLEN + n * MC_ENTRY
		if mtype == MC_NACK then
			info = info .. string.format(" receiver %d", tvb(32, 4):uint())
		end
		info = info .. string.format(" %d entr%s", n, n == 1 and "y" or "ies")
		if len ~= want then
			ni:add_proto_expert_info(ex_mc_len)
		else
			for i = 0, n - 1 do
				local off = MC_HLEN + i * MC_ENTRY
				local e = t:add(psbmc, tvb(off, MC_ENTRY), string.format("Entry %d", i))
				e:add(mf.e_group, tvb(off, 4))
				e:add(mf.e_need, tvb(off + 4, 2))
				e:add(mf.e_missing, tvb(off + 8, 8))
				if i < 4 then
					info = info .. string.format(" [group %d need %d missing 0x%s]",
						tvb(off, 4):uint(), tvb(off + 4, 2):uint(),
						tvb(off + 8, 8):uint64():tohex())
				end
			end
		end
	else
		ti:add_proto_expert_info(ex_mc_type)
	end
	if (mtype == MC_DATA or mtype == MC_PARITY) and len > MC_HLEN then
		t:add(mf.payload, tvb(MC_HLEN))
	end
	if len ~= want then info = "[malformed] " .. info end
	if wver ~= MC_WIRE_VERSION then info = "[wire version 1] " .. info end
	pinfo.cols.info = info
	t:append_text(", " .. info)
	return true
end

psbmc:register_heuristic("udp", mc_dissect)

local psbst = Proto("psbst", "psb staleness experiment")
local ST_MAGIC, ST_LEN = 0x5354, 48
local ST_POST, ST_PULL, ST_ACK = 1, 2, 3
local st_type_names = { [ST_POST] = "POST", [ST_PULL] = "PULL", [ST_ACK] = "ACK" }
local sf = {
	magic = ProtoField.uint16("psbst.magic", "Magic", base.HEX),
	wver = ProtoField.uint8("psbst.version", "Wire version", base.DEC),
	type = ProtoField.uint8("psbst.type", "Type", base.DEC, st_type_names),
	session = ProtoField.uint32("psbst.session", "Session", base.HEX),
	worker = ProtoField.uint32("psbst.worker", "Worker", base.DEC),
	held = ProtoField.uint32("psbst.held", "Version held (ACK: the trainer's newest)",
		base.DEC),
	samples = ProtoField.uint32("psbst.samples", "Samples", base.DEC),
	seq = ProtoField.uint32("psbst.seq", "Sequence", base.DEC),
	sum = ProtoField.uint64("psbst.sum", "Sum of the versions sampled (join: key)", base.DEC),
	window = ProtoField.uint64("psbst.window_ns", "Window (ns)", base.DEC),
	flags = ProtoField.uint64("psbst.flags", "Flags", base.HEX),
}
psbst.fields = { sf.magic, sf.wver, sf.type, sf.session, sf.worker, sf.held, sf.samples, sf.seq,
	sf.sum, sf.window, sf.flags }
local ex_st_len = ProtoExpert.new("psbst.length", "Not 48 bytes (the trainer drops it)",
	expert.group.MALFORMED, expert.severity.ERROR)
psbst.experts = { ex_st_len }

local function st_dissect(tvb, pinfo, tree)
	local len = tvb:len()
	if len < 4 or tvb(0, 2):uint() ~= ST_MAGIC or tvb(2, 1):uint() ~= 1 then
		return false
	end
	pinfo.cols.protocol = "psbst"
	local t = tree:add(psbst, tvb())
	local mtype = tvb(3, 1):uint()
	t:add(sf.magic, tvb(0, 2))
	t:add(sf.wver, tvb(2, 1))
	t:add(sf.type, tvb(3, 1))
	local info = st_type_names[mtype] or string.format("type=%d", mtype)
	if len ~= ST_LEN then
		t:add_proto_expert_info(ex_st_len)
		pinfo.cols.info = "[malformed] " .. info
		return true
	end
	t:add(sf.session, tvb(4, 4))
	t:add(sf.worker, tvb(8, 4))
	t:add(sf.held, tvb(12, 4))
	local worker, held = tvb(8, 4):uint(), tvb(12, 4):uint()
	if mtype == ST_ACK then
		t:add(sf.flags, tvb(32, 8))
		local flags = tvb(32, 8):uint64():tonumber()
		info = info .. string.format(" worker %d newest %d", worker, held)
		if flags % 2 == 1 then info = info .. " [end]" end
		if math.floor(flags / 2) % 2 == 1 then info = info .. " [waiting]" end
	else
		t:add(sf.samples, tvb(16, 4))
		t:add(sf.seq, tvb(20, 4))
		t:add(sf.sum, tvb(24, 8))
		local samples = tvb(16, 4):uint()
		if mtype == ST_POST and samples == 0 then
			info = info .. string.format(" worker %d joins (key %s)", worker,
				tostring(tvb(24, 8):uint64()))
		elseif mtype == ST_POST then
			t:add(sf.window, tvb(32, 8))
			info = info .. string.format(" worker %d holds %d; mean %.3f of %d samples "
				.. "over %.3f s", worker, held, tvb(24, 8):uint64():tonumber() / samples,
				samples, tvb(32, 8):uint64():tonumber() / 1e9)
		else
			info = info .. string.format(" worker %d holds %d", worker, held)
		end
	end
	pinfo.cols.info = info
	t:append_text(", " .. info)
	return true
end

psbst:register_heuristic("udp", st_dissect)
