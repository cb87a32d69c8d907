#!/usr/bin/env python3
"""Writes the synthetic moebench reports under tests/data/reports/ that the compare, render and
repro tests read. Deterministic (seeded), so rerunning it reproduces the committed files.

The figures are modelled on those measured on an H200: a read ceiling of about 4550 GB/s, MoE
layers at a fixed cost plus their deduplicated weight bytes at ~85% of the ceiling, and run-to-run
noise of about 0.3% with an occasional slow outlier, as nvbench-style stopping leaves it.

    python3 tests/data/generate_reports.py
"""
import copy
import json
import math
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "reports")

SHAPES = {
    "deepseek-v2-lite": dict(hidden=2048, moe_inter=1408, experts=64, top_k=6, shared_experts=2),
    "qwen3-30b-a3b": dict(hidden=2048, moe_inter=768, experts=128, top_k=8, shared_experts=0),
}
MS = [1, 2, 4, 8, 16, 32]
FORMATS = ["bf16", "int4"]
CEILING = 4550.0


def percentile(sorted_values, p):
    if not sorted_values:
        return 0.0
    rank = p * (len(sorted_values) - 1)
    lo = math.floor(rank)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (rank - lo)


def stats(values):
    s = sorted(values)
    n = len(s)
    mean = sum(s) / n if n else 0.0
    rsd = 0.0
    if n >= 2 and mean != 0:
        rsd = math.sqrt(sum((x - mean) ** 2 for x in s) / (n - 1)) / abs(mean)
    return {"min": s[0] if n else 0.0, "p10": percentile(s, 0.1), "median": percentile(s, 0.5),
            "p90": percentile(s, 0.9), "max": s[-1] if n else 0.0, "mean": mean, "rsd": rsd,
            "count": n}


def samples(rng, center, noise, n, outliers=True):
    out = []
    for i in range(n):
        x = center * (1 + rng.gauss(0, noise))
        if outliers and rng.random() < 0.04:
            x *= 1 + 8 * noise  # a preempted or clock-dipped sample
        # A time is positive: very noisy series are cut at a tenth of their centre, never below
        # zero (load_report refuses a time of 0 or less).
        out.append(round(max(x, 0.1 * center), 4))
    return out


def measurement(rng, gpu_us, host_us, n, noise, kernels=3):
    gpu = samples(rng, gpu_us, noise, n)
    host = samples(rng, host_us, noise * 10, n)
    kern = [round(g * 0.93, 4) for g in gpu]
    m = {"samples": n, "l2": "cold", "stop_reason": "converged",
         "total_gpu_time_s": sum(gpu) * 1e-6, "gpu_time_us": stats(gpu),
         "host_time_us": stats(host), "kernel_timing": True, "throttled_samples": 0,
         "throttle_reasons": [],
         "raw": {"gpu_time_us": gpu, "host_time_us": host, "kernel_time_us": kern,
                 "kernel_count": [float(kernels)] * n, "sm_clock_mhz": [1980.0] * n,
                 "throttled": [False] * n}}
    m["kernel_time_us"] = stats(kern)
    m["kernel_count"] = stats([float(kernels)] * n)
    m["launch_gap_us"] = stats([g - k for g, k in zip(gpu, kern)])
    m["sm_clock_mhz"] = stats([1980.0] * n)
    return m


def key(c):
    k = c["probe"] + "/" + c["name"]
    for f in ("shape", "m", "format", "mode", "mutation"):
        if c.get(f) is not None:
            k += "/%s=%s" % (f, c[f])
    return k


def case(probe, name, verdict="PASS", reason="", **fields):
    c = {"probe": probe, "name": name, "shape": None, "m": None, "format": None, "mode": None,
         "mutation": None, "seed": 1, "verdict": verdict, "reason": reason, "metrics": {},
         "measurements": {}, "checks": [], "evidence": {}, "parameters": {}}
    c.update(fields)
    return c


def expert_bytes(shape, fmt):
    h, i = shape["hidden"], shape["moe_inter"]
    if fmt == "bf16":
        return 3 * h * i * 2
    return 3 * h * i // 2 + 3 * h * i // 128 * 2  # int4 plus a bf16 scale per group of 128


def moe_case(rng, shape_name, m, fmt, mode, noise, n, slowdown=1.0, ceiling=CEILING):
    shape = SHAPES[shape_name]
    e, k = shape["experts"], shape["top_k"]
    distinct = e * (1 - (1 - k / e) ** m) + shape["shared_experts"]
    bytes_dedup = distinct * expert_bytes(shape, fmt) + shape["experts"] * shape["hidden"] * 2
    fixed = 6.0 if mode == "graph" else 14.0
    gpu_us = (fixed + bytes_dedup / (0.85 * ceiling * 1e3)) * slowdown
    host_us = 5.5 if mode == "graph" else 24.0
    c = case("bandwidth", mode, shape=shape_name, m=m, format=fmt, mode=mode,
             reason="output matched the CPU reference; GB/s over median GPU time")
    c["measurements"]["main"] = measurement(rng, gpu_us, host_us, n, noise)
    median = c["measurements"]["main"]["gpu_time_us"]["median"]
    gbps = bytes_dedup / (median * 1e-6) * 1e-9
    c["metrics"] = {"bytes_dedup": {"value": bytes_dedup, "unit": "B"},
                    "gbps": {"value": gbps, "unit": "GB/s"},
                    "pct_of_read_ceiling": {"value": 100 * gbps / ceiling, "unit": "%"}}
    c["checks"] = [{"name": "output_matches_reference", "passed": True,
                    "detail": "max abs error 0.0039 within tolerance 0.0156"}]
    return c


def copy_cases(rng, noise, n, ceiling=CEILING):
    bytes_ = 4 << 30
    out = []
    for name, factor, rw in (("read", 1.0, 1), ("memcpy", 0.93, 2), ("copy-kernel", 0.87, 2)):
        gbps_target = ceiling * factor
        gpu_us = rw * bytes_ / (gbps_target * 1e3)
        c = case("copy", name, mode=name, reason="read ceiling measured" if name == "read"
                 else "bytes read + written over median GPU time")
        c["measurements"]["main"] = measurement(rng, gpu_us, 4.0, n, noise, kernels=1)
        median = c["measurements"]["main"]["gpu_time_us"]["median"]
        g = rw * bytes_ / (median * 1e-6) * 1e-9
        c["metrics"] = {"bytes": {"value": float(rw * bytes_), "unit": "B"},
                        "gbps": {"value": g, "unit": "GB/s"}}
        if name == "read":
            c["metrics"]["read_ceiling_gbps"] = {"value": g, "unit": "GB/s"}
        else:
            c["metrics"]["pct_of_read_ceiling"] = {"value": 100 * g / ceiling, "unit": "%"}
        c["parameters"] = {"bytes": bytes_}
        c["checks"] = [{"name": "read_xor_matches_cpu" if name == "read" else "copy_matches_source",
                        "passed": True, "detail": "GPU and CPU agree"}]
        out.append(c)
    return out


def envelope(started, gpu="NVIDIA H200", uuid="GPU-5c1e0a7e-3f4b-2a91-8d6e-0b7f3c2d1e90",
             driver="13.0", cc="9.0", sms=132, commit="d7cabc8b5e0f4a1c9e2d3b4a5c6d7e8f9a0b1c2d"):
    return {
        "schema": "moebench.report", "schema_version": 1,
        "tool": {"name": "moebench", "version": "0.1.0", "git_commit": commit, "git_dirty": False,
                 "build_type": "Release", "cuda_architectures": "90a",
                 "cxx_compiler": "GNU 12.2.0", "cuda_compiler": "NVIDIA 13.0.48"},
        "invocation": {"argv": ["moebench", "run", "copy", "bandwidth"], "started_at": started,
                       "finished_at": started, "complete": True},
        "environment": {
            "host": {"hostname": "gpu-runner-7", "os": "Linux 6.8.0", "machine": "x86_64",
                     "cpu_count": 64},
            "software": {"cuda_runtime": "13.0", "cuda_driver": driver, "cupti_api": 26},
            "gpu": {"index": 0, "name": gpu, "uuid": uuid, "pci_bus_id": "0000:19:00.0",
                    "compute_capability": cc, "sm_count": sms, "memory_bytes": 150754820096,
                    "memory_bus_width_bits": 6144, "l2_bytes": 62914560, "ecc_enabled": True,
                    "max_sm_clock_mhz": 1980, "max_memory_clock_mhz": 3201, "nvml": True,
                    "sm_clock_mhz_now": 1980, "memory_clock_mhz_now": 3201,
                    "throttle_reasons_now": [], "available": True}},
        "options": {"shapes": [], "m": [], "weight_formats": [], "modes": [], "l2": "cold",
                    "kernel_timing": True, "warmup": 1, "min_samples": 10, "max_noise": 0.005,
                    "min_time_s": 0.5, "timeout_s": 15.0, "max_samples": 5000, "device": 0,
                    "seed": 1, "copy_bytes": 0, "mutation": None},
        "cases": [], "extra": {}}


def suite(seed, noise=0.003, n=24, slow=None, started="2025-06-01T10:00:00Z", **env):
    rng = random.Random(seed)
    r = envelope(started, **env)
    r["cases"] += copy_cases(rng, noise, n)
    for shape in SHAPES:
        for fmt in FORMATS:
            for m in MS:
                factor = (slow or {}).get((shape, m, fmt), 1.0)
                r["cases"].append(moe_case(rng, shape, m, fmt, "graph", noise, n, factor))
    finish(r)
    return r


def finish(r):
    worst = "PASS"
    rank = {"PASS": 0, "INCONCLUSIVE": 1, "FAIL": 2, "ERROR": 3}
    for c in r["cases"]:
        c["key"] = key(c)
        if rank[c["verdict"]] > rank[worst]:
            worst = c["verdict"]
    r["overall"] = worst
    order = ["schema", "schema_version", "tool", "invocation", "environment", "options",
             "overall", "cases", "extra"]
    return {k: r[k] for k in order}


def write(name, r):
    r = finish(r)
    with open(os.path.join(OUT, name), "w") as f:
        json.dump(r, f, separators=(",", ":"))
        f.write("\n")


# Expert parallelism over two H200s of one host, as `moebench run ep-step ep-hang
# ep-drop-inflight --devices 0,1` records it: rank 0's report, every case with per-rank values
# (evidence.per_rank) and, per metric, NAME_min / NAME_mean / NAME_max over ranks; no sampled
# measurements (the probe keeps medians per rank); the environment with its `ranks` block.
EP_SHAPES = ["deepseek-v2-lite", "qwen3-30b-a3b"]
EP_MS = [1, 8, 32]
EP_METRICS = [("route_us", "us"), ("dispatch_us", "us"), ("compute_us", "us"), ("combine_us", "us"),
              ("step_us", "us"), ("host_enqueue_us", "us"), ("wire_bytes", "bytes"),
              ("exchange_gbps", "GB/s"), ("share_of_ceiling", "ratio")]


def ep_rank_values(rng, rank, shape, m, exchange, slowdown):
    s = SHAPES[shape]
    base = 1.0 + 0.04 * rank  # rank 1 a little slower: its GPU is farther from the switch
    route = (9.0 + 0.05 * m) * base
    dispatch = (18.0 + 0.4 * m) * base * (0.9 if exchange == "alltoall" else 1.0) * slowdown
    compute = (25.0 + 1.6 * m) * base
    combine = (16.0 + 0.5 * m) * base
    wire = 2 * 16 + m * (s["hidden"] * 2 + 16 + s["hidden"] * 4 + 16) * s["top_k"] // 2
    exchanged = 2 * 2 * (m * (s["hidden"] * 6 + 48) + 16)
    gbps = exchanged / ((dispatch + combine) * 1e3)
    jitter = lambda x: round(x * (1 + rng.gauss(0, 0.002)), 3)
    v = {"rank": rank, "device": rank, "passed": True, "rel_l2": 0.0031 + 0.0001 * rank,
         "check": "relative L2 %.4f over %d tokens (at most 0.02)" % (0.0031 + 0.0001 * rank, m),
         "tokens_checked": m, "route_us": jitter(route), "dispatch_us": jitter(dispatch),
         "compute_us": jitter(compute), "combine_us": jitter(combine),
         "host_enqueue_us": jitter(31.0 + 2 * rank), "wire_bytes": wire, "exchanged_bytes": exchanged,
         "exchange_gbps": gbps, "ceiling_bus_gbps": 341.2, "share_of_ceiling": gbps / 341.2}
    v["step_us"] = v["route_us"] + v["dispatch_us"] + v["compute_us"] + v["combine_us"]
    return v


def ep_step_case(rng, shape, m, exchange, slowdown=1.0):
    ranks = [ep_rank_values(rng, r, shape, m, exchange, slowdown) for r in range(2)]
    c = case("ep-step", exchange, shape=shape, m=m, format="bf16", mode="eager",
             reason="output matched the reference on every rank; times per rank",
             required_evidence=["outputs_checked"])
    c["checks"] = [{"name": "output_matches_reference", "passed": True,
                    "detail": "; ".join("rank %d: %s" % (r["rank"], r["check"]) for r in ranks)}]
    c["evidence"] = {"outputs_checked": True, "per_rank": ranks}
    for name, unit in EP_METRICS:
        vals = [r[name] for r in ranks]
        c["metrics"][name + "_min"] = {"value": min(vals), "unit": unit}
        c["metrics"][name + "_mean"] = {"value": sum(vals) / len(vals), "unit": unit}
        c["metrics"][name + "_max"] = {"value": max(vals), "unit": unit}
    c["parameters"] = {"ranks": 2, "exchange": exchange, "map": "contiguous: %d experts over 2 ranks"
                       % SHAPES[shape]["experts"]}
    return c


def ep_hang_case(timeout):
    peers = [{"rank": 0, "silent": False, "entered_wait": True, "seconds": timeout + 0.02,
              "error": "rank 0: an exchange with a silent rank did not finish within %.3f s (a peer rank "
                       "is missing or stuck); communicator aborted" % timeout},
             {"rank": 1, "silent": True, "entered_wait": False}]
    c = case("ep-hang", "silent-rank", reason="every peer aborted its communicator within --timeout, "
             "naming its rank", required_evidence=["silent_rank_joined", "peers_waited_on_it"])
    c["checks"] = [{"name": "peers_aborted_within_timeout", "passed": True,
                    "detail": "rank 0 after %.2f s: %s" % (peers[0]["seconds"], peers[0]["error"])}]
    c["evidence"] = {"silent_rank_joined": True, "peers_waited_on_it": True, "per_rank": peers}
    c["parameters"] = {"ranks": 2, "silent_rank": 1}
    return c


def ep_drop_case():
    ranks = [{"rank": r, "receive_buffers": ["0x7f%d2a000000" % r, "0x7f%d2c000000" % r],
              "successor_blocks": ["0x7f%d30000000" % r, "0x7f%d32000000" % r],
              "receive_blocks_handed_out_while_pending": [], "pending_at_drop": True,
              "pending_after_successor": True, "successor_bytes": 1320960, "successor_bytes_changed": 0,
              "receive_blocks_reused_after_completion": 2, "output_matches": True,
              "output_detail": "relative L2 0.0030 over 32 tokens (at most 0.02)"} for r in range(2)]
    c = case("ep-drop-inflight", "layer", shape="deepseek-v2-lite", m=32, format="bf16",
             reason="every rank dropped its layer with the exchange in flight; the receive blocks went "
                    "to the next owner only after the step finished, and its output was right",
             required_evidence=["every_rank_answered", "exchange_pending_at_drop",
                                "exchange_pending_while_successor_wrote", "receive_blocks_handed_out_again"])
    c["checks"] = [{"name": n, "passed": True, "detail": d} for n, d in (
        ("no_receive_block_handed_out_while_pending", "no rank's receive buffers went to another owner"),
        ("successor_bytes_intact", "every byte the successor wrote read back unchanged on every rank"),
        ("inflight_output_matches_reference", "the dropped step's output matched the reference on every rank"))]
    c["evidence"] = {"per_rank": ranks, "every_rank_answered": True, "exchange_pending_at_drop": True,
                     "exchange_pending_while_successor_wrote": True, "receive_blocks_handed_out_again": True}
    c["parameters"] = {"ranks": 2, "hold_ns": 200000000, "exchange": "alltoall"}
    return c


def ep_ranks_environment():
    pcis = ["0000:19:00.0", "0000:3B:00.0"]
    per_rank = []
    for r in range(2):
        links = [{"link": k, "active": True, "remote_pci_bus_id": "00000000:%s" % ("C1:00.0" if k % 2 else "C2:00.0")}
                 for k in range(18)]
        per_rank.append({"rank": r, "hostname": "gpu-runner-7", "device": r, "name": "NVIDIA H200",
                         "uuid": "GPU-5c1e0a7e-3f4b-2a91-8d6e-0b7f3c2d1e9%d" % r, "pci_bus_id": pcis[r],
                         "nvlink": {"available": True, "links": links}, "nvlink_active_links": 18})
    return {"world": 2, "hosts": 1, "gpus_distinct": True, "per_rank": per_rank,
            "peer_access": [[None, True], [True, None]], "nvlink_links": [[None, 0], [0, None]]}


def ep_suite(seed, started, slow=None, commit="d7cabc8b5e0f4a1c9e2d3b4a5c6d7e8f9a0b1c2d"):
    rng = random.Random(seed)
    r = envelope(started, commit=commit)
    r["invocation"]["argv"] = ["moebench", "run", "ep-step", "ep-hang", "ep-drop-inflight", "--devices", "0,1",
                               "--timeout", "5"]
    r["options"]["timeout_s"] = 5.0
    r["options"]["devices"] = [0, 1]
    r["options"]["shapes"] = [dict(name=n, scoring="softmax", renormalize=True, description=n, **SHAPES[n])
                              for n in EP_SHAPES]
    r["options"]["m"] = EP_MS
    r["options"]["weight_formats"] = ["bf16"]
    r["environment"]["ranks"] = ep_ranks_environment()
    for shape in EP_SHAPES:
        for m in EP_MS:
            for exchange in ("alltoall", "sendrecv"):
                r["cases"].append(ep_step_case(rng, shape, m, exchange, (slow or {}).get((shape, m, exchange), 1.0)))
    r["cases"].append(ep_hang_case(5.0))
    r["cases"].append(ep_drop_case())
    return r


def main():
    # Each report is its own run: its own start time (compare warns about two copies of one).
    os.makedirs(OUT, exist_ok=True)
    base = suite(1)
    write("h200-base.json", base)
    # The same build run again: only the noise differs. Must compare SAME everywhere.
    write("h200-same-build.json", suite(2, started="2025-06-01T11:00:00Z"))
    # One case planted 5% slower; one 5% faster.
    write("h200-slower-5pct.json", suite(3, slow={("deepseek-v2-lite", 8, "bf16"): 1.05}, started="2025-06-01T13:00:00Z",
                                         commit="a1b2c3d4e5f60718293a4b5c6d7e8f9012345678"))
    write("h200-faster-5pct.json", suite(4, slow={("qwen3-30b-a3b", 4, "int4"): 0.95}, started="2025-06-01T14:00:00Z",
                                         commit="b2c3d4e5f60718293a4b5c6d7e8f901234567890"))
    # Same timings, but one verdict got worse (a check now fails) and one case is gone while a
    # new one appeared.
    v = suite(5, started="2025-06-01T15:00:00Z")
    bad = next(c for c in v["cases"] if c["name"] == "graph" and c["m"] == 2
               and c["shape"] == "qwen3-30b-a3b" and c["format"] == "bf16")
    bad["verdict"] = "FAIL"
    bad["reason"] = "check 'output_matches_reference' failed: max abs error 0.73 above 0.0156"
    bad["checks"][0] = {"name": "output_matches_reference", "passed": False,
                        "detail": "max abs error 0.73 above tolerance 0.0156 at token 1, col 77"}
    write("h200-verdict-fail.json", v)
    gone = suite(6, started="2025-06-01T16:00:00Z")
    gone["cases"] = [c for c in gone["cases"] if not (c["m"] == 32 and c["format"] == "int4")]
    rng = random.Random(60)
    extra = moe_case(rng, "deepseek-v2-lite", 64, "bf16", "graph", 0.003, 24)
    gone["cases"].append(extra)
    write("h200-cases-changed.json", gone)
    # Another GPU and driver: the comparison must warn.
    write("a100-other-gpu.json", suite(7, started="2025-06-01T17:00:00Z", gpu="NVIDIA A100-SXM4-80GB",
                                       uuid="GPU-0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9",
                                       driver="12.8", cc="8.0", sms=108))
    # Noisy machines: 6% noise, 12 samples, no real change: the samples overlap so widely that
    # no change of 2% can be shown or ruled out -> AMBIGUOUS, never SLOWER.
    write("noisy-base.json", suite(8, noise=0.06, n=12, started="2025-06-02T10:00:00Z"))
    write("noisy-head.json", suite(9, noise=0.06, n=12, started="2025-06-02T11:00:00Z"))
    # Three samples a case (a timeout hit early): the range rule decides. One case 10% slower.
    write("few-samples-base.json", suite(10, n=3, started="2025-06-02T12:00:00Z"))
    write("few-samples-head.json", suite(11, n=3, slow={("deepseek-v2-lite", 1, "bf16"): 1.10},
                                           started="2025-06-02T13:00:00Z"))
    # A copy-probe report as `moebench run copy` records it, for repro; and one recorded under a
    # mutation per case, as selftest records them.
    rng = random.Random(12)
    cp = envelope("2025-06-01T12:00:00Z")
    cp["invocation"]["argv"] = ["moebench", "run", "copy", "--copy-bytes", "1073741824"]
    cp["options"]["copy_bytes"] = 1 << 30
    cp["options"]["shapes"] = [dict(name="deepseek-v2-lite", scoring="softmax", renormalize=True,
                                    description="DeepSeek-V2-Lite MoE layer",
                                    **SHAPES["deepseek-v2-lite"])]
    cp["options"]["m"] = [1, 8]
    cp["cases"] = copy_cases(rng, 0.003, 12)
    write("h200-copy.json", cp)
    mut = copy.deepcopy(cp)
    for c in mut["cases"][1:]:
        c["mutation"] = "noop-timing-barrier"
    write("h200-copy-mutations.json", mut)
    # Expert parallelism on two GPUs; the head's dispatch of one case 30% slower on both ranks.
    write("h200x2-ep-base.json", ep_suite(13, "2025-06-03T10:00:00Z"))
    write("h200x2-ep-head.json", ep_suite(14, "2025-06-03T11:00:00Z",
                                          slow={("deepseek-v2-lite", 32, "alltoall"): 1.3},
                                          commit="c3d4e5f60718293a4b5c6d7e8f90123456789012"))


if __name__ == "__main__":
    main()
