"""The baseline of the evals benchmark (xtask/bench/src/evals.rs): pydantic-evals runs a
dataset of N cases against a pydantic-ai agent on a FunctionModel that echoes the prompt (no
network, no tools), scored by the trivial EqualsExpected evaluator, at a given concurrency.

Usage: python pydantic_evals_bench.py CASES CONCURRENCY REPEATS
Prints one JSON line: {"cases": N, "concurrency": C, "seconds": [...], "passed": P}.
"""

import json
import sys
import time

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_evals import Case, Dataset
from pydantic_evals.evaluators import EqualsExpected


def echo(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    prompt = messages[-1].parts[-1].content
    return ModelResponse(parts=[TextPart(f"echo: {prompt}")])


def main() -> None:
    cases, concurrency, repeats = (int(arg) for arg in sys.argv[1:4])
    agent = Agent(FunctionModel(echo))

    async def task(prompt: str) -> str:
        result = await agent.run(prompt)
        return result.output

    dataset = Dataset(
        name="bench",
        cases=[
            Case(name=f"case-{i}", inputs=f"prompt {i}", expected_output=f"echo: prompt {i}")
            for i in range(cases)
        ],
        evaluators=[EqualsExpected()],
    )
    seconds = []
    passed = 0
    for _ in range(repeats + 1):
        start = time.perf_counter()
        report = dataset.evaluate_sync(task, max_concurrency=concurrency, progress=False)
        elapsed = time.perf_counter() - start
        seconds.append(elapsed)
        passed = sum(
            1 for case in report.cases if all(r.value is True for r in case.assertions.values())
        )
    # The first run warms up.
    print(json.dumps({"cases": cases, "concurrency": concurrency, "seconds": seconds[1:], "passed": passed}))


if __name__ == "__main__":
    main()
