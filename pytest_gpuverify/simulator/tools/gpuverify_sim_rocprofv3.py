#!/usr/bin/env python3
"""The simulated ``rocprofv3 --kernel-trace --output-format rocpd -d DIR -o NAME -- CMD``: runs CMD and
writes ``DIR/NAME_results.db``, a SQLite database in rocpd's own schema (version 3: per-run tables
suffixed by the run's uuid, the unsuffixed ``rocpd_*`` views over them, timestamps in their own table).

Simulated kernels have no GPU to be seen on: a program reports each launch it "ran" as one JSON line
(``name``, ``grid``, ``workgroup``, ``start_ns``, ``end_ns``, optional ``code_object`` file) appended to
the file ``$GPUVERIFY_SIM_KERNEL_LOG`` names, which this tool sets for the command. Stdlib only.
"""

import json
import os
import sqlite3
import subprocess
import sys
import time
import uuid

from gpuverify_sim_common import fault

KERNEL_LOG_VAR = "GPUVERIFY_SIM_KERNEL_LOG"
SCHEMA_VERSION = "3"

# the tables of rocpd's schema that a kernel trace fills, column for column as rocprofv3 creates them
TABLES = {
    "rocpd_metadata": '"id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "tag" TEXT NOT NULL, "value" TEXT NOT NULL',
    "rocpd_string": '"id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "guid" TEXT NOT NULL, '
    '"string" TEXT NOT NULL UNIQUE ON CONFLICT ABORT',
    "rocpd_info_node": '"id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "guid" TEXT NOT NULL, '
    '"hash" BIGINT NOT NULL UNIQUE, "machine_id" TEXT NOT NULL UNIQUE, "name" TEXT, "system_name" TEXT, '
    '"hostname" TEXT, "release" TEXT, "version" TEXT, "hardware_name" TEXT, "domain_name" TEXT',
    "rocpd_info_process": '"id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "guid" TEXT NOT NULL, '
    '"nid" INTEGER NOT NULL, "ppid" INTEGER, "pid" INTEGER NOT NULL, "name" TEXT, "init" BIGINT, "fini" BIGINT, '
    '"start" BIGINT, "end" BIGINT, "command" TEXT, "environment" JSONB DEFAULT "{}" NOT NULL, '
    '"extdata" JSONB DEFAULT "{}" NOT NULL',
    "rocpd_info_agent": '"id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "guid" TEXT NOT NULL, '
    '"nid" INTEGER NOT NULL, "pid" INTEGER NOT NULL, "type" TEXT CHECK ("type" IN (\'CPU\', \'GPU\')), '
    '"absolute_index" INTEGER, "logical_index" INTEGER, "type_index" INTEGER, "uuid" INTEGER, "name" TEXT, '
    '"generic_name" TEXT, "model_name" TEXT, "vendor_name" TEXT, "product_name" TEXT, '
    '"extdata" JSONB DEFAULT "{}" NOT NULL',
    "rocpd_info_code_object": '"id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "guid" TEXT NOT NULL, '
    '"nid" INTEGER NOT NULL, "pid" INTEGER NOT NULL, "agent_id" INTEGER, "uri" TEXT, "load_base" BIGINT, '
    '"load_size" BIGINT, "load_delta" BIGINT, "storage_type" TEXT CHECK ("storage_type" IN (\'FILE\', \'MEMORY\')), '
    '"extdata" JSONB DEFAULT "{}" NOT NULL',
    "rocpd_info_kernel_symbol": '"id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "guid" TEXT NOT NULL, '
    '"nid" INTEGER NOT NULL, "pid" INTEGER NOT NULL, "code_object_id" INTEGER NOT NULL, "kernel_name" TEXT, '
    '"display_name" TEXT, "kernel_object" INTEGER, "kernarg_segment_size" INTEGER, '
    '"kernarg_segment_alignment" INTEGER, "group_segment_size" INTEGER, "private_segment_size" INTEGER, '
    '"sgpr_count" INTEGER, "arch_vgpr_count" INTEGER, "accum_vgpr_count" INTEGER, '
    '"extdata" JSONB DEFAULT "{}" NOT NULL',
    "rocpd_track": '"id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "guid" TEXT NOT NULL, "nid" INTEGER NOT NULL, '
    '"ppid" INTEGER, "pid" INTEGER, "tid" INTEGER, "agent_id" INTEGER, "queue_id" INTEGER, "stream_id" INTEGER, '
    '"name_id" INTEGER, "extdata" JSONB DEFAULT "{}" NOT NULL',
    "rocpd_timestamp": '"id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "guid" TEXT NOT NULL, '
    '"value" BIGINT NOT NULL, "phase" INTEGER CHECK ("phase" IN (0, 1, 2)), "track_id" INTEGER',
    "rocpd_event": '"id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "guid" TEXT NOT NULL, "category_id" INTEGER, '
    '"stack_id" INTEGER, "parent_stack_id" INTEGER, "correlation_id" INTEGER, '
    '"call_stack" JSONB DEFAULT "{}" NOT NULL, "line_info" JSONB DEFAULT "{}" NOT NULL, '
    '"extdata" JSONB DEFAULT "{}" NOT NULL',
    "rocpd_kernel_dispatch": '"id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "guid" TEXT NOT NULL, '
    '"track_id" INTEGER NOT NULL, "kernel_id" INTEGER NOT NULL, "dispatch_id" INTEGER NOT NULL, '
    '"start_id" INTEGER NOT NULL, "end_id" INTEGER NOT NULL, "private_segment_size" INTEGER, '
    '"group_segment_size" INTEGER, "workgroup_size_x" INTEGER NOT NULL, "workgroup_size_y" INTEGER NOT NULL, '
    '"workgroup_size_z" INTEGER NOT NULL, "grid_size_x" INTEGER NOT NULL, "grid_size_y" INTEGER NOT NULL, '
    '"grid_size_z" INTEGER NOT NULL, "region_name_id" INTEGER, "event_id" INTEGER, '
    '"extdata" JSONB DEFAULT "{}" NOT NULL',
}


def parse(argv):
    """(options, command): ``-d``/``--output-directory``, ``-o``/``--output-file``, ``--output-format``."""
    if "--" not in argv:
        return None, None
    split = argv.index("--")
    opts, cmd, i = {}, argv[split + 1 :], 0
    names = {"-d": "dir", "--output-directory": "dir", "-o": "name", "--output-file": "name"}
    names["--output-format"] = "format"
    while i < split:
        arg = argv[i]
        if arg in names and i + 1 < split:
            opts[names[arg]] = argv[i + 1]
            i += 2
            continue
        opts.setdefault("flags", []).append(arg)
        i += 1
    return opts, cmd


def read_launches(path):
    launches = []
    try:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                try:
                    launches.append(json.loads(line))
                except ValueError:
                    continue
    except OSError:
        pass
    return launches


def write_db(path, launches, command, pid, st):
    suffix = "_" + uuid.uuid4().hex
    guid = uuid.uuid4().hex
    con = sqlite3.connect(path)
    try:
        for table, columns in TABLES.items():
            con.execute('CREATE TABLE "%s%s" (%s)' % (table, suffix, columns))
            con.execute('CREATE VIEW "%s" AS SELECT * FROM "%s%s"' % (table, table, suffix))
        t = {name: '"%s%s"' % (name, suffix) for name in TABLES}
        for tag, value in (("schema_version", SCHEMA_VERSION), ("uuid", suffix[1:]), ("guid", guid)):
            con.execute("INSERT INTO %s (tag, value) VALUES (?, ?)" % t["rocpd_metadata"], (tag, value))
        con.execute(
            "INSERT INTO %s (id, guid, hash, machine_id, hostname) VALUES (1, ?, 1, ?, ?)" % t["rocpd_info_node"],
            (guid, uuid.uuid4().hex, os.uname().nodename),
        )
        con.execute(
            "INSERT INTO %s (id, guid, nid, pid, command) VALUES (1, ?, 1, ?, ?)" % t["rocpd_info_process"],
            (guid, pid, " ".join(command)),
        )
        gpu = (st.get("gpus") or [{}])[0]
        con.execute(
            "INSERT INTO %s (id, guid, nid, pid, type, absolute_index, logical_index, type_index, name) "
            "VALUES (1, ?, 1, ?, 'GPU', 0, 0, 0, ?)" % t["rocpd_info_agent"],
            (guid, pid, gpu.get("arch", "gfx942")),
        )
        con.execute(
            "INSERT INTO %s (id, guid, nid, pid, agent_id) VALUES (1, ?, 1, ?, 1)" % t["rocpd_track"], (guid, pid)
        )
        objects, symbols = {}, {}
        for n, la in enumerate(launches, start=1):
            where = la.get("code_object")
            if where not in objects:
                size = os.path.getsize(where) if where and os.path.isfile(where) else 0
                uri = (
                    "file://%s#offset=0&size=%d" % (where, size)
                    if where
                    else "memory://%d#offset=0x%x&size=%d"
                    % (
                        pid,
                        0x7F0000000000 + 0x10000 * len(objects),
                        4096,
                    )
                )
                con.execute(
                    "INSERT INTO %s (guid, nid, pid, agent_id, uri, storage_type) VALUES (?, 1, ?, 1, ?, ?)"
                    % t["rocpd_info_code_object"],
                    (guid, pid, uri, "FILE" if where else "MEMORY"),
                )
                objects[where] = con.execute("SELECT last_insert_rowid()").fetchone()[0]
            key = (la["name"], objects[where])
            if key not in symbols:
                con.execute(
                    "INSERT INTO %s (guid, nid, pid, code_object_id, kernel_name, display_name) VALUES (?, 1, ?, ?, ?, ?)"
                    % t["rocpd_info_kernel_symbol"],
                    (guid, pid, objects[where], la["name"] + ".kd", la["name"]),
                )
                symbols[key] = con.execute("SELECT last_insert_rowid()").fetchone()[0]
            stamps = []
            for value, phase in ((int(la["start_ns"]), 1), (int(la["end_ns"]), 2)):
                con.execute(
                    "INSERT INTO %s (guid, value, phase, track_id) VALUES (?, ?, ?, 1)" % t["rocpd_timestamp"],
                    (guid, value, phase),
                )
                stamps.append(con.execute("SELECT last_insert_rowid()").fetchone()[0])
            con.execute("INSERT INTO %s (guid, correlation_id) VALUES (?, ?)" % t["rocpd_event"], (guid, n))
            event = con.execute("SELECT last_insert_rowid()").fetchone()[0]
            grid, wg = list(la.get("grid") or [1, 1, 1]) + [1, 1], list(la.get("workgroup") or [256, 1, 1]) + [1, 1]
            con.execute(
                "INSERT INTO %s (guid, track_id, kernel_id, dispatch_id, start_id, end_id, workgroup_size_x, "
                "workgroup_size_y, workgroup_size_z, grid_size_x, grid_size_y, grid_size_z, event_id) "
                "VALUES (?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)" % t["rocpd_kernel_dispatch"],
                (guid, symbols[key], n, stamps[0], stamps[1], wg[0], wg[1], wg[2], grid[0], grid[1], grid[2], event),
            )
        con.commit()
    finally:
        con.close()


def rocprofv3(argv, st):
    if argv[:1] == ["--version"]:
        print("rocprofv3 (simulated) rocprofiler-sdk %s" % st.get("rocm_version", "6.4.1"))
        return 0
    opts, cmd = parse(argv)
    if not cmd:
        sys.stderr.write("rocprofv3: error: no application given: rocprofv3 [options] -- <application> [args]\n")
        return 2
    kind = (st.get("faults") or {}).get("rocprofv3")
    if kind == "hang":
        return fault("rocprofv3", st)
    if kind == "fail":
        sys.stderr.write("rocprofv3: error: rocprofiler_configure failed: the tool library could not be loaded\n")
        return 1
    out_dir = opts.get("dir") or os.getcwd()
    name = opts.get("name") or str(os.getpid())
    os.makedirs(out_dir, exist_ok=True)
    log = os.path.join(out_dir, ".%s.launches.jsonl" % name)
    env = dict(os.environ, **{KERNEL_LOG_VAR: log})
    started = time.time_ns()
    try:
        proc = subprocess.Popen(cmd, env=env)
    except OSError as exc:
        sys.stderr.write("rocprofv3: error: cannot run %s: %s\n" % (cmd[0], exc))
        return 127
    code = proc.wait()
    db = os.path.join(out_dir, "%s_results.db" % name)
    if kind == "garbage":
        with open(db, "wb") as fh:
            fh.write(b"\x00not a database\x01" * 64)
    else:
        launches = [] if kind == "empty" else read_launches(log)
        write_db(db, sorted(launches, key=lambda la: la.get("start_ns", started)), cmd, proc.pid, st)
    try:
        os.unlink(log)
    except OSError:
        pass
    return code
