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

local pf = {
	magic = ProtoField.uint16("psb.magic", "Magic", base.HEX),
	version = ProtoField.uint8("psb.version", "Version", base.DEC),
	type = ProtoField.uint8("psb.type", "Type", base.HEX, type_names),
	flags = ProtoField.uint8("psb.flags", "Flags", base.HEX),
	flag_sync = ProtoField.bool("psb.flags.sync", "Sync", 8, nil, F_SYNC,
		"Request belongs to a synchronous round"),
	flag_server = ProtoField.bool("psb.flags.server", "Server", 8, nil, F_SERVER,
		"REGISTER: the node is a server"),
	flag_worker = ProtoField.bool("psb.flags.worker", "Worker", 8, nil, F_WORKER,
		"REGISTER: the node is a worker"),
	flag_beats = ProtoField.bool("psb.flags.beats", "Beats", 8, nil, F_BEATS,
		"REGISTER: the node sends HEARTBEATs; the scheduler watches it"),
	status = ProtoField.uint8("psb.status", "Status", base.DEC, status_names),
	sender = ProtoField.uint16("psb.sender", "Sender", base.DEC),
	req_id = ProtoField.uint32("psb.req_id", "Request id", base.DEC),
	round = ProtoField.uint32("psb.round", "Round", base.DEC),
	key = ProtoField.uint64("psb.key", "Key", base.DEC),
	total_len = ProtoField.uint32("psb.total_len", "Total length", base.DEC),
	offset = ProtoField.uint32("psb.offset", "Offset", base.DEC),
	seg_len = ProtoField.uint16("psb.seg_len", "Segment length", base.DEC),
	seg_size = ProtoField.uint16("psb.seg_size", "Segment size", base.DEC),
	aux = ProtoField.uint32("psb.aux", "Aux", base.DEC),
	epoch = ProtoField.uint32("psb.epoch", "Server epoch", base.HEX, nil, nil,
		"aux of a server's answer: changes when the server restarts (0: not said)"),
	value = ProtoField.bytes("psb.value", "Value"),
	nfloats = ProtoField.uint32("psb.nfloats", "Floats in segment", base.DEC),
	float = ProtoField.float("psb.float", "Float"),
	-- REGISTER_ACK payload: the scheduler's server table.
	num_servers = ProtoField.uint16("psb.sched.num_servers", "Servers", base.DEC),
	num_workers = ProtoField.uint16("psb.sched.num_workers", "Workers", base.DEC),
	srv_ip = ProtoField.ipv4("psb.sched.server_ip", "Server address"),
	srv_port = ProtoField.uint16("psb.sched.server_port", "Server port", base.DEC),
	key_begin = ProtoField.uint64("psb.sched.key_begin", "First key", base.DEC),
	key_end = ProtoField.uint64("psb.sched.key_end", "Key end", base.DEC),
	-- REPAIR / REPAIR_RESP payload: which segments are missing.
	rep_type = ProtoField.uint8("psb.repair.req_type", "Request type", base.HEX, type_names),
	rep_flags = ProtoField.uint8("psb.repair.flags", "Repair flags", base.HEX),
	rep_all = ProtoField.bool("psb.repair.all", "All", 8, nil, R_ALL,
		"REPAIR_RESP: the server knows nothing of the request; it is sent again whole"),
	rep_with_round = ProtoField.bool("psb.repair.has_round", "Has round", 8, nil, R_ROUND,
		"REPAIR: the worker has begun the answer of version `round`"),
	rep_base = ProtoField.uint32("psb.repair.base", "First segment", base.DEC),
	rep_nbits = ProtoField.uint32("psb.repair.nbits", "Segments covered", base.DEC),
	rep_round = ProtoField.uint32("psb.repair.round", "Answer version", base.DEC),
	rep_missing = ProtoField.uint32("psb.repair.missing", "Segments missing", base.DEC),
	-- HEARTBEAT_ACK payload: the servers the job lost.
	lost_count = ProtoField.uint16("psb.lost.count", "Entries", base.DEC),
	lost_rank = ProtoField.uint16("psb.lost.rank", "Server rank", base.DEC),
	lost_why = ProtoField.uint8("psb.lost.why", "Why", base.DEC, lost_why_names),
	lost_ip = ProtoField.ipv4("psb.lost.ip", "Server address"),
	lost_port = ProtoField.uint16("psb.lost.port", "Server port", base.DEC),
	lost_silent = ProtoField.uint32("psb.lost.silent_ms", "Silent (ms)", base.DEC, nil, nil,
		"dead: how long the server had been silent; 0 for restarted"),
}

psb.fields = {
	pf.magic, pf.version, pf.type, pf.flags, pf.flag_sync, pf.flag_server, pf.flag_worker,
	pf.flag_beats, pf.status, pf.sender, pf.req_id, pf.round, pf.key, pf.total_len, pf.offset,
	pf.seg_len, pf.seg_size, pf.aux, pf.epoch, pf.value, pf.nfloats, pf.float, pf.num_servers,
	pf.num_workers, pf.srv_ip, pf.srv_port, pf.key_begin, pf.key_end, pf.rep_type,
	pf.rep_flags, pf.rep_all, pf.rep_with_round, pf.rep_base, pf.rep_nbits, pf.rep_round,
	pf.rep_missing, pf.lost_count, pf.lost_rank, pf.lost_why, pf.lost_ip, pf.lost_port,
	pf.lost_silent,
}

local ex = {
	short = ProtoExpert.new("psb.short", "Shorter than the 40-byte psb header",
		expert.group.MALFORMED, expert.severity.ERROR),
	bad_magic = ProtoExpert.new("psb.bad_magic", "Bad psb magic (psb drops the frame)",
		expert.group.MALFORMED, expert.severity.ERROR),
	seg_len = ProtoExpert.new("psb.seg_len_mismatch",
		"seg_len does not match the payload length (psb drops the frame)",
		expert.group.MALFORMED, expert.severity.ERROR),
	segment = ProtoExpert.new("psb.bad_segment",
		"Segment fields inconsistent (psb drops the frame)",
		expert.group.MALFORMED, expert.severity.ERROR),
	version = ProtoExpert.new("psb.foreign_version",
		"Unsupported version (psb answers with ERROR bad_version)",
		expert.group.PROTOCOL, expert.severity.WARN),
	error = ProtoExpert.new("psb.error", "psb ERROR response",
		expert.group.RESPONSE_CODE, expert.severity.NOTE),
	table = ProtoExpert.new("psb.bad_table", "Server table shorter than its count",
		expert.group.MALFORMED, expert.severity.WARN),
	repair = ProtoExpert.new("psb.bad_repair",
		"Repair bitmap longer than the message (psb counts it: repair_bad)",
		expert.group.MALFORMED, expert.severity.WARN),
	lost = ProtoExpert.new("psb.bad_lost",
		"Lost-server list malformed (a psb worker ignores the HEARTBEAT_ACK)",
		expert.group.MALFORMED, expert.severity.WARN),
	oversize = ProtoExpert.new("psb.oversize",
		"Frame longer than psb's 9216-byte receive buffers (psb drops it: oversize)",
		expert.group.MALFORMED, expert.severity.ERROR),
	echo = ProtoExpert.new("psb.echo_refused",
		"ECHO longer than 1024 bytes or not one whole segment (psb does not answer it: " ..
		"echo refused)", expert.group.PROTOCOL, expert.severity.WARN),
}

psb.experts = {
	ex.short, ex.bad_magic, ex.seg_len, ex.segment, ex.version, ex.error, ex.table, ex.oversize,
	ex.repair, ex.lost, ex.echo,
}

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

local function dissect_table(tvb, tree)
	local len = tvb:len()
	if len < 4 then
		tree:add_tvb_expert_info(ex.table, tvb)
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
		local s = t:add(tvb(off, 24), string.format("Server %d", i))
		s:add(pf.srv_ip, tvb(off, 4))
		s:add(pf.srv_port, tvb(off + 4, 2))
		s:add(pf.key_begin, tvb(off + 8, 8))
		s:add(pf.key_end, tvb(off + 16, 8))
	end
end

-- REPAIR / REPAIR_RESP: 16-byte record, then bit i (byte i / 8, bit i % 8) for segment
-- base + i. Returns a text for the Info column.
local function dissect_repair(tvb, t)
	local len = tvb:len()
	if len < 16 then
		t:add_tvb_expert_info(ex.repair, tvb)
		return " [short repair]"
	end
	local flags = tvb(1, 1):uint()
	local b = tvb(4, 4):uint()
	local nbits = tvb(8, 4):uint()
	t:add(pf.rep_type, tvb(0, 1))
	local fi = t:add(pf.rep_flags, tvb(1, 1))
	fi:add(pf.rep_all, tvb(1, 1))
	fi:add(pf.rep_with_round, tvb(1, 1))
	t:add(pf.rep_base, tvb(4, 4))
	t:add(pf.rep_nbits, tvb(8, 4))
	t:add(pf.rep_round, tvb(12, 4))
	if has_flag(flags, R_ALL) then
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
	if len < 4 then
		t:add_tvb_expert_info(ex.lost, tvb, "Lost-server list shorter than 4 bytes" .. ignored)
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
		local rank = tvb(off, 2):uint()
		local why = tvb(off + 2, 1):uint()
		local addr = string.format("%s:%d", tostring(tvb(off + 4, 4):ipv4()),
			tvb(off + 8, 2):uint())
		local silent = tvb(off + 12, 4):uint()
		local text = string.format("server %d %s %s", rank, addr,
			lost_why_names[why] or string.format("why=%d", why))
		if why == LOST_DEAD then
			text = text .. string.format(" after %dms", silent)
		end
		local e = l:add(tvb(off, LOST_ENTRY), "Lost " .. text)
		e:add(pf.lost_rank, tvb(off, 2))
		local wi = e:add(pf.lost_why, tvb(off + 2, 1))
		if lost_why_names[why] == nil then
			wi:add_tvb_expert_info(ex.lost, tvb(off + 2, 1),
				string.format("Lost server with unknown reason %d", why) .. ignored)
			bad = bad or " [bad lost list]"
		end
		e:add(pf.lost_ip, tvb(off + 4, 4))
		e:add(pf.lost_port, tvb(off + 8, 2))
		e:add(pf.lost_silent, tvb(off + 12, 4))
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

	local magic = tvb(0, 2):uint()
	local version = tvb(2, 1):uint()
	local mtype = tvb(3, 1):uint()
	local flags = tvb(4, 1):uint()
	local status = tvb(5, 1):uint()
	local req_id = tvb(8, 4):uint()
	local round = tvb(12, 4):uint()
	local key = tvb(16, 8):uint64()
	local total = tvb(24, 4):uint()
	local offset = tvb(28, 4):uint()
	local seg_len = tvb(32, 2):uint()
	local seg_size = tvb(34, 2):uint()
	local aux = tvb(36, 4):uint()
	local plen = len - HDR_LEN

	local mi = root:add(pf.magic, tvb(0, 2))
	if magic ~= MAGIC then
		mi:add_proto_expert_info(ex.bad_magic)
	end
	local vi = root:add(pf.version, tvb(2, 1))
	if version ~= VERSION then
		vi:add_proto_expert_info(ex.version)
	end
	root:add(pf.type, tvb(3, 1))
	local fi = root:add(pf.flags, tvb(4, 1))
	fi:add(pf.flag_sync, tvb(4, 1))
	fi:add(pf.flag_server, tvb(4, 1))
	fi:add(pf.flag_worker, tvb(4, 1))
	fi:add(pf.flag_beats, tvb(4, 1))
	local si = root:add(pf.status, tvb(5, 1))
	if mtype == T_ERROR then
		si:add_proto_expert_info(ex.error)
	end
	root:add(pf.sender, tvb(6, 2))
	root:add(pf.req_id, tvb(8, 4))
	root:add(pf.round, tvb(12, 4))
	root:add(pf.key, tvb(16, 8))
	root:add(pf.total_len, tvb(24, 4))
	root:add(pf.offset, tvb(28, 4))
	local li = root:add(pf.seg_len, tvb(32, 2))
	if seg_len ~= plen then
		li:add_proto_expert_info(ex.seg_len)
	elseif version == VERSION then
		-- psb checks the segment fields only for its own version.
		local why = segment_problem(total, offset, seg_len, seg_size)
		if why ~= nil then
			li:add_proto_expert_info(ex.segment, why)
		end
	end
	root:add(pf.seg_size, tvb(34, 2))
	root:add(pf.aux, tvb(36, 4))
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
		info = info .. " status=" .. (status_names[status] or tostring(status))
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
