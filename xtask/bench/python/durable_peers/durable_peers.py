"""The peers of mux's durable runs in the durable_peers benchmark (xtask/bench/src/durable_peers.rs).

One agent workload on PostgreSQL: a scripted model asks for the tool `count`, the tool runs once
(it appends the run's id to a file, so how often it ran is countable), the model answers "ok".
Model turn, tool call, model turn: each a step the system records before the next one starts.

- LangGraph 1.2: a `StateGraph` over `MessagesState` (model node -> tool node -> model node),
  checkpointed by `langgraph-checkpoint-postgres`'s `PostgresSaver` on a connection pool, invoked
  with `durability="sync"`; a run is a thread.
- DBOS 3.4: a workflow of steps (model step, tool step, model step); a run is a workflow id.

Usage:
  durable_peers.py bench  SYSTEM URL CONCURRENCY RUNS COUNTS_FILE
      warms up, then times RUNS runs, CONCURRENCY at a time (threads); prints
      {"runs_per_s", "p99_ms", "tool_runs"} (tool_runs: lines this process's runs appended).
  durable_peers.py crash  SYSTEM URL RUN_ID COUNTS_FILE MARKER_FILE
      starts run RUN_ID; its second model turn writes MARKER_FILE and waits to be killed.
  durable_peers.py resume SYSTEM URL RUN_ID COUNTS_FILE
      continues run RUN_ID after its process was killed; prints {"answer"}.
"""

import json
import os
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

# Set by `crash`: the second model turn stops here until the process is killed.
SLOW_MARKER = None


def append_count(counts_file, run_id):
    """The tool's side effect: one line with the run's id, appended in one write."""
    fd = os.open(counts_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (run_id + "\n").encode())
    finally:
        os.close(fd)


def second_turn_wait():
    """In `crash` mode: say that the second model turn started, then hang until killed."""
    if SLOW_MARKER is not None:
        with open(SLOW_MARKER, "w") as marker:
            marker.write("second model turn\n")
        time.sleep(600)
        raise SystemExit("the crash run was not killed within 600 s")


def sql_url(url):
    """The URL with the scheme SQLAlchemy and psycopg both read."""
    if url.startswith("postgres://"):
        return "postgresql://" + url[len("postgres://"):]
    return url


class LangGraph:
    """The workload as a LangGraph graph checkpointed by PostgresSaver."""

    def __init__(self, url, pool_size, counts_file):
        from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
        from langgraph.checkpoint.postgres import PostgresSaver
        from langgraph.graph import END, START, MessagesState, StateGraph
        from psycopg.rows import dict_row
        from psycopg_pool import ConnectionPool

        self.human = HumanMessage
        self.pool = ConnectionPool(
            sql_url(url),
            min_size=1,
            max_size=pool_size,
            kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
            open=True,
        )
        saver = PostgresSaver(self.pool)
        saver.setup()

        def model(state):
            last = state["messages"][-1]
            if isinstance(last, ToolMessage):
                second_turn_wait()
                return {"messages": [AIMessage(content="ok")]}
            call = {"name": "count", "args": {"n": 1}, "id": "call_1", "type": "tool_call"}
            return {"messages": [AIMessage(content="", tool_calls=[call])]}

        def tool(state, config):
            append_count(counts_file, config["configurable"]["thread_id"])
            return {"messages": [ToolMessage(content="ok", tool_call_id="call_1")]}

        def route(state):
            return "tool" if state["messages"][-1].tool_calls else END

        graph = StateGraph(MessagesState)
        graph.add_node("model", model)
        graph.add_node("tool", tool)
        graph.add_edge(START, "model")
        graph.add_conditional_edges("model", route, ["tool", END])
        graph.add_edge("tool", "model")
        self.graph = graph.compile(checkpointer=saver)

    def run(self, run_id):
        config = {"configurable": {"thread_id": run_id}}
        out = self.graph.invoke(
            {"messages": [self.human(content="go")]}, config, durability="sync"
        )
        return out["messages"][-1].content

    def resume(self, run_id):
        config = {"configurable": {"thread_id": run_id}}
        out = self.graph.invoke(None, config, durability="sync")
        return out["messages"][-1].content

    def close(self):
        self.pool.close()


class Dbos:
    """The workload as a DBOS workflow of steps."""

    def __init__(self, url, pool_size, counts_file):
        from dbos import DBOS, SetWorkflowID

        self.dbos = DBOS
        self.set_id = SetWorkflowID
        DBOS(
            config={
                "name": "mux-bench-durable-peers",
                "system_database_url": sql_url(url),
                "sys_db_pool_size": pool_size,
                "log_level": "WARNING",
            }
        )

        @DBOS.step()
        def model_step(messages):
            if messages[-1]["role"] == "tool":
                second_turn_wait()
                return {"role": "assistant", "content": "ok"}
            call = {"name": "count", "args": {"n": 1}, "id": "call_1"}
            return {"role": "assistant", "content": "", "tool_calls": [call]}

        @DBOS.step()
        def tool_step(run_id):
            append_count(counts_file, run_id)
            return "ok"

        @DBOS.workflow()
        def agent(prompt):
            messages = [{"role": "user", "content": prompt}]
            reply = model_step(messages)
            messages.append(reply)
            result = tool_step(DBOS.workflow_id)
            messages.append({"role": "tool", "content": result, "tool_call_id": "call_1"})
            return model_step(messages)["content"]

        self.agent = agent
        DBOS.launch()

    def run(self, run_id):
        with self.set_id(run_id):
            return self.agent("go")

    def resume(self, run_id):
        # DBOS.launch() recovered the pending workflows of this executor; wait for this one.
        return self.dbos.retrieve_workflow(run_id).get_result()

    def close(self):
        self.dbos.destroy()


SYSTEMS = {"langgraph": LangGraph, "dbos": Dbos}


def system(name, url, pool_size, counts_file):
    if name not in SYSTEMS:
        raise SystemExit(f"unknown system {name!r}: expected one of {sorted(SYSTEMS)}")
    return SYSTEMS[name](url, pool_size, counts_file)


def timed(subject, prefix, runs, concurrency):
    """Runs/s and p99 ms of `runs` runs, `concurrency` at a time; each must answer "ok"."""
    latencies = []
    lock = threading.Lock()

    def one(n):
        started = time.perf_counter()
        answer = subject.run(f"{prefix}-{n}")
        if answer != "ok":
            raise RuntimeError(f"run {prefix}-{n} answered {answer!r}")
        elapsed = time.perf_counter() - started
        with lock:
            latencies.append(elapsed)

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        for future in [pool.submit(one, n) for n in range(runs)]:
            future.result()
    elapsed = time.perf_counter() - started
    latencies.sort()
    p99 = latencies[min(len(latencies) * 99 // 100, len(latencies) - 1)]
    return runs / elapsed, p99 * 1000.0


def count_lines(counts_file, prefix):
    try:
        with open(counts_file) as f:
            return sum(1 for line in f if line.startswith(prefix))
    except FileNotFoundError:
        return 0


def bench(name, url, concurrency, runs, counts_file):
    subject = system(name, url, max(8, concurrency + 4), counts_file)
    prefix = f"{name}-c{concurrency}-{uuid.uuid4().hex[:12]}"
    try:
        timed(subject, prefix + "-warm", max(runs // 10, 1), concurrency)
        runs_per_s, p99_ms = timed(subject, prefix + "-run", runs, concurrency)
    finally:
        subject.close()
    tool_runs = count_lines(counts_file, prefix + "-run-")
    print(json.dumps({"runs_per_s": runs_per_s, "p99_ms": p99_ms, "tool_runs": tool_runs}))


def main(argv):
    global SLOW_MARKER
    if len(argv) < 2:
        raise SystemExit(__doc__)
    mode, rest = argv[1], argv[2:]
    if mode == "bench" and len(rest) == 5:
        name, url, concurrency, runs, counts_file = rest
        bench(name, url, int(concurrency), int(runs), counts_file)
    elif mode == "crash" and len(rest) == 5:
        name, url, run_id, counts_file, SLOW_MARKER = rest
        subject = system(name, url, 8, counts_file)
        subject.run(run_id)
        raise SystemExit("the crash run finished: its second model turn did not wait")
    elif mode == "resume" and len(rest) == 4:
        name, url, run_id, counts_file = rest
        subject = system(name, url, 8, counts_file)
        try:
            answer = subject.resume(run_id)
        finally:
            subject.close()
        print(json.dumps({"answer": answer}))
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
