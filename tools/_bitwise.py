"""The save / cmp driver shared by tools/local_bitwise.py and tools/window_bitwise.py: run the cases
with the reference build's extension and save their outputs, then with the candidate's and compare
every tensor bitwise."""
import sys
from typing import Callable, List

import torch


def bitwise_main(run_cases: Callable[[], List[List[torch.Tensor]]], usage: str, name: str) -> int:
    """``python TOOL save|cmp PATH``: 0 when saved or every tensor is equal, 1 on any difference,
    2 on bad arguments or without a CUDA GPU. Each differing tensor is named (case, output)."""
    if len(sys.argv) != 3 or sys.argv[1] not in ("save", "cmp"):
        print(usage)
        return 2
    if not torch.cuda.is_available():
        print(f"{name}: needs a CUDA GPU")
        return 2
    mode, path = sys.argv[1], sys.argv[2]
    cases = run_cases()
    if mode == "save":
        torch.save(cases, path)
        print(f"saved {sum(len(c) for c in cases)} tensors to {path}")
        return 0
    ref = torch.load(path)
    total = sum(len(c) for c in cases)
    bad = 0
    for i, (ca, cb) in enumerate(zip(cases, ref)):
        for j, (a, b) in enumerate(zip(ca, cb)):
            if not torch.equal(a, b):
                bad += 1
                print(f"  differs: case {i} output {j}")
    print(f"bitwise-equal tensors: {total - bad} of {total}, differ: {bad}")
    return 1 if bad else 0
