"""The engines' own messages (runsnap/knowledge/engine-messages.tsv): each row's provenance, and
each message found in a line that prints it with its fields filled."""

from __future__ import annotations

import re

from runsnap.knowledge.engines import governing, rows

ENGINES = {"nccl", "gloo", "torch", "cuda", "vllm", "sglang", "cpython", "huggingface_hub",
           "transformers"}


def test_every_row_says_where_the_message_is_and_which_half_it_is_in() -> None:
    assert len(rows()) >= 10
    for row in rows():
        assert row.engine in ENGINES, row
        assert row.half in ("tune", "held-out"), row
        assert row.names and all(n.strip() for n in row.names), row
        # a repository and a path in it (or the CUDA runtime's own error string, printed by
        # a repository's code)
        assert re.match(r"([\w.-]+/[\w.-]+ [\w./-]+|NVIDIA CUDA runtime )", row.source), row


def test_a_line_that_prints_the_message_finds_its_row() -> None:
    for row in rows():
        if row.message.startswith("type:"):
            continue
        filled = re.sub(r"%[-+ #0-9.]*(?:hh|h|ll|l|z|j|t)?[sdiuxXfgcp]|\{[^{}]*\}", "eth9",
                        row.message)
        line = f"host:12:34 [0] {row.engine.upper()} WARN {filled}"
        assert row in governing((line,), ""), row
        assert row not in governing((row.message[: len(row.message) // 2],), ""), row


def test_a_warning_raised_as_an_error_finds_the_warnings_setting() -> None:
    found = governing((), "DeprecationWarning")
    assert [r.engine for r in found] == ["cpython"]
    assert found[0].governs("PYTHONWARNINGS", "error::DeprecationWarning")
    assert not found[0].governs("PYTHONWARNINGS", "ignore")
    assert governing((), "ValueError") == ()


# Each row added from the engines' sources (SGLang 0.5.23 and 0.4.6, vLLM 0.34.0, torch 2.14.1, NCCL
# 2.30.7 and 2.21.5, the CUDA runtime 12.9), and a line as the engine prints it: quoted from a
# public issue thread where the note says so, else the format string filled with the values a
# real start-up prints (the log prefix each engine's logger writes included).
PRINTED = {
    # sglang
    "Warning: {reason} context_length ({context_length}) is greater than the derived "
    "context_length ({derived_context_len}).":
        "ValueError: Warning: Target model's context_length (131072) is greater than the derived "
        "context_length (2048). This may lead to incorrect model outputs or CUDA errors. To "
        "allow overriding this maximum, set the env var SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1",
    # the same check in sglang 0.4.6.post5, before the draft model's case had its own words
    "User-specified context_length ({context_length}) is greater than the derived "
    "context_length ({derived_context_len}).":
        "ValueError: User-specified context_length (8192) is greater than the derived "
        "context_length (2048). This may lead to incorrect model outputs or CUDA errors.",
    "Capture cuda graph failed: {e}":
        "Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 2.00 GiB.",
    "Not enough memory. Please try to increase --mem-fraction-static.":
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current "
        "value: mem_fraction_static=0.3",
    "Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static={}.":
        "ValueError: Loaded weights leave no GPU memory for the KV cache under "
        "--mem-fraction-static=0.5. Raise --mem-fraction-static above 0.812",
    "The memory capacity is unbalanced. Some GPUs may be occupied by other processes.":
        "RuntimeError: The memory capacity is unbalanced. Some GPUs may be occupied by other "
        "processes. pre_model_load_memory=41.2, local_gpu_memory=78.9, "
        "local_gpu_memory * 0.9=71.01",
    "{port_name} at {port} is not available in {timeout_s} seconds.":
        "ValueError: dist_init_port at 30001 is not available in 30 seconds. port 30001 is in use",
    "tp_size must be divisible by number of nodes":
        "AssertionError: tp_size must be divisible by number of nodes",
    "TRTLLM MHA backend for prefill requires Hopper (SM90), Blackwell (SM100), or SM120 GPUs.":
        "ValueError: TRTLLM MHA backend for prefill requires Hopper (SM90), Blackwell (SM100), "
        "or SM120 GPUs. Please use a different prefill backend.",
    "TRTLLM MHA backend for decode is only supported on Hopper (SM90), Blackwell (SM100) and "
    "(SM120) GPUs.":
        "ValueError: TRTLLM MHA backend for decode is only supported on Hopper (SM90), Blackwell "
        "(SM100) and (SM120) GPUs. Please use a different decode backend.",
    "TRTLLM FMHAv2 prefill on SM120 does not support fp8_e4m3 KV cache or skip-softmax.":
        "ValueError: TRTLLM FMHAv2 prefill on SM120 does not support fp8_e4m3 KV cache or "
        "skip-softmax.",
    "speculative_eagle_topk > 1 with page_size > 1 is only supported on {}; got "
    "attention_backend={}.":
        "ValueError: speculative_eagle_topk > 1 with page_size > 1 is only supported on "
        "('flashinfer', 'fa3', 'triton'); got attention_backend='flashmla'. Use page_size == 1 "
        "or one of those backends.",
    "topk=1 requires speculative_num_draft_tokens == speculative_num_steps + 1, got {} and {}":
        "AssertionError: topk=1 requires speculative_num_draft_tokens == speculative_num_steps "
        "+ 1, got 8 and 3",
    "Gemma4AssistantForCausalLM draft requires --speculative-algorithm NEXTN or EAGLE; EAGLE3 "
    "is not supported for this draft architecture.":
        "ValueError: Gemma4AssistantForCausalLM draft requires --speculative-algorithm NEXTN or "
        "EAGLE; EAGLE3 is not supported for this draft architecture.",
    # vllm: quoted from EvolvingLMMs-Lab/LongVT issue 9 ("problem in starting 72b server")
    "User-specified max_model_len ({max_model_len}) is greater than the derived max_model_len "
    "({max_len_key}={derived_max_model_len} or model_max_length={model_max_length} in model's "
    "config.json).":
        "Value error, User-specified max_model_len (131072) is greater than the derived "
        "max_model_len (max_position_embeddings=32768.0 or model_max_length=None in model's "
        "config.json). To allow overriding this maximum, set the env var "
        "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1.",
    "No available memory for the cache blocks.":
        "ValueError: No available memory for the cache blocks. Try increasing "
        "`gpu_memory_utilization` when initializing the engine.",
    "Free memory on device {} ({}/{} GiB) on startup is less than desired GPU memory "
    "utilization ({}, {} GiB).":
        "ValueError: Free memory on device cuda:0 (21.3/79.2 GiB) on startup is less than "
        "desired GPU memory utilization (0.9, 71.28 GiB). Decrease GPU memory utilization or "
        "reduce GPU memory used by other processes.",
    "Total number of attention heads ({total_num_attention_heads}) must be divisible by tensor "
    "parallel size ({tensor_parallel_size}).":
        "ValueError: Total number of attention heads (28) must be divisible by tensor parallel "
        "size (8).",
    "max_num_batched_tokens ({}) is smaller than max_model_len ({}).":
        "ValueError: max_num_batched_tokens (2048) is smaller than max_model_len (32768). This "
        "effectively limits the maximum sequence length to max_num_batched_tokens",
    "max_num_batched_tokens ({}) must be greater than or equal to max_num_seqs ({}).":
        "ValueError: max_num_batched_tokens (128) must be greater than or equal to max_num_seqs "
        "(256).",
    "Bfloat16 is only supported on GPUs with compute capability of at least 8.0.":
        "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least "
        "8.0. Your Tesla T4 GPU has compute capability 7.5.",
    "The quantization method {} is not supported for the current GPU. Minimum capability: {}. "
    "Current capability: {}.":
        "ValueError: The quantization method fp8 is not supported for the current GPU. Minimum "
        "capability: 80. Current capability: 75.",
    "{} is not supported for quantization method {}. Supported dtypes: {}":
        "ValueError: torch.float32 is not supported for quantization method awq. Supported "
        "dtypes: [torch.float16]",
    "Selected backend {} is not valid for this configuration. Reason: {}":
        "ValueError: Selected backend AttentionBackendEnum.FLASHINFER is not valid for this "
        "configuration. Reason: ['head_size not supported']",
    "No valid attention backend found for {} with {}. Reasons: {}.":
        "ValueError: No valid attention backend found for cuda with "
        "AttentionSelectorConfig(head_size=80, dtype=torch.float32, kv_cache_dtype=auto, "
        "block_size=16). Reasons: {FLASH_ATTN: [dtype not supported]}.",
    # torch
    "ProcessGroupNCCL's watchdog got stuck for {} seconds without making progress in "
    "monitoring enqueued collectives.":
        "[rank0]:[F1205 10:01:02.123456789 ProcessGroupNCCL.cpp:1687] [PG ID 0 PG GUID "
        "0(default_pg) Rank 0] ProcessGroupNCCL's watchdog got stuck for 480 seconds without "
        "making progress in monitoring enqueued collectives.",
    # quoted from sgl-project/sglang issue 1693
    "To avoid data inconsistency, we are taking the entire process down.":
        "[rank4]:[E1016 03:31:38.929246900 ProcessGroupNCCL.cpp:627] [Rank 4] To avoid data "
        "inconsistency, we are taking the entire process down.",
    # quoted from hiyouga/LlamaFactory issue 7396
    "Watchdog caught collective operation timeout: {} ran for {} milliseconds before timing "
    "out.":
        "[rank0]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught "
        "collective operation timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, "
        "NumelIn=466119168, NumelOut=466119168, Timeout(ms)=600000) ran for 600060 "
        "milliseconds before timing out.",
    "Requested unified CUBLASLT workspace size of {} bytes exceeds CUBLAS workspace size of {} "
    "bytes.":
        "UserWarning: Requested unified CUBLASLT workspace size of 33554432 bytes exceeds "
        "CUBLAS workspace size of 4194304 bytes. Please increase CUBLAS workspace size via "
        "CUBLAS_WORKSPACE_CONFIG",
    "use_libuv was requested but PyTorch was built without libuv support, run with USE_LIBUV=0 "
    "to disable it.":
        "torch.distributed.DistStoreError: use_libuv was requested but PyTorch was built "
        "without libuv support, run with USE_LIBUV=0 to disable it.",
    "Can't get device handle": "UserWarning: Can't get device handle",
    "Can't get device UUID": "UserWarning: Can't get device UUID",
    # nccl
    "Multiple Ranks are using the same GPU/Partition.":
        "gpu-03:29880:30398 [0] init.cc:1057 NCCL WARN Multiple Ranks are using the same "
        "GPU/Partition. Set NCCL_MULTI_RANK_GPU_ENABLE=1 to enable this configuration.",
    # quoted from horovod/horovod issue 3929
    "Duplicate GPU detected : rank %d and rank %d both on CUDA device %lx":
        "[1,2]<stdout>:smc-gpu-03:29880:30398 [0] init.cc:497 NCCL WARN Duplicate GPU "
        "detected : rank 2 and rank 0 both on CUDA device 1000",
    "P2P is disabled between NVLINK connected GPUs %d and %d.":
        "node1:812:901 [1] graph/paths.cc:396 NCCL WARN P2P is disabled between NVLINK "
        "connected GPUs 1 and 3. This should not be the case given their connectivity",
    "Error while %s shared memory segment %s (size %ld)":
        "node1:812:901 [0] os/linux.cc:842 NCCL WARN Error while creating shared memory "
        "segment /dev/shm/nccl-7tM1cQ (size 9637888), error: No space left on device (28)",
    "Failed to initialize any NET plugin":
        "node1:812:901 [0] plugin/net.cc:349 NCCL WARN Failed to initialize any NET plugin",
    "NET/IB: Got completion from peer %s with status=%s(%d) opcode=%s(%d) vendor_err=%u":
        "node1:812:950 [3] transport/net_ib/p2p.cc:688 NCCL WARN NET/IB: Got completion from "
        "peer 10.0.0.2<51234> with status=transport retry counter exceeded(12) "
        "opcode=RDMA_WRITE(0) vendor_err=129  hca mlx5_0",
    "NET/IB : Got completion from peer %s with status=%d opcode=%d len=%d vendor err %d":
        "node1:812:950 [3] transport/net_ib.cc:1909 NCCL WARN NET/IB : Got completion from "
        "peer 10.0.0.2<51234> with status=12 opcode=0 len=0 vendor err 129 (Send)",
    "NET/IB : Attempted to connect incompatible devices: [%d]%s:%d/%s and [%d]%s:%d/%s.":
        "node1:812:950 [0] transport/net_ib/connect.cc:987 NCCL WARN NET/IB : Attempted to "
        "connect incompatible devices: [1]mlx5_1:1/RoCE and [0]mlx5_0:1/IB. Try selecting NICs "
        "of only one link type using NCCL_IB_HCA",
    # cuda
    "CUDA-capable device(s) is/are busy or unavailable":
        "RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable",
    "system has unsupported display driver / cuda driver combination":
        "RuntimeError: Unexpected error from cudaGetDeviceCount(). Error 803: system has "
        "unsupported display driver / cuda driver combination",
    "forward compatibility was attempted on non supported HW":
        "RuntimeError: Unexpected error from cudaGetDeviceCount(). Error 804: forward "
        "compatibility was attempted on non supported HW",
}


def test_each_added_row_is_found_in_the_line_its_engine_prints_and_no_other_row_is() -> None:
    by_message = {r.message: r for r in rows()}
    assert set(PRINTED) <= set(by_message), set(PRINTED) - set(by_message)
    for message, line in PRINTED.items():
        row = by_message[message]
        assert row.half == "held-out", row
        assert governing((line,), "") == (row,), (line, governing((line,), ""))


def test_the_sglang_context_length_row_names_its_variable_and_its_option() -> None:
    line = PRINTED["Warning: {reason} context_length ({context_length}) is greater than the "
                   "derived context_length ({derived_context_len})."]
    (row,) = governing((line,), "")
    assert row.engine == "sglang" and "model_config.py" in row.source
    assert row.governs("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN", None)
    assert row.governs("--context-length", "131072")
    assert not row.governs("SGLANG_USE_MODELSCOPE", "true")


def test_nvmls_uuid_failures_are_the_visible_devices_setting_whichever_torch_path_printed_it() -> None:
    # torch/cuda/__init__.py (2.14.1) asks NVML for UUIDs only when CUDA_VISIBLE_DEVICES
    # names GPUs by UUID: the device-count warning and the device-index RuntimeError alike
    for line in ("UserWarning: Can't get device UUID", "RuntimeError: Can't get device UUIDs"):
        (row,) = governing((line,), "")
        assert row.governs("CUDA_VISIBLE_DEVICES", "GPU-8f1c2a7e")


def test_a_model_missing_from_the_offline_cache_is_the_cache_location_and_offline_settings() -> None:
    # the two lines transformers 5.25 and huggingface_hub 2.4 print when from_pretrained runs
    # offline (HF_HUB_OFFLINE=1) and the model is not under the cache HF_HOME names: the
    # hub's own error, then transformers' OSError raised from it
    hub = ("huggingface_hub.errors.LocalEntryNotFoundError: Cannot find the requested files in "
           "the disk cache and outgoing traffic has been disabled. To enable hf.co look-ups and "
           "downloads online, set 'local_files_only' to False.")
    wrapped = ("OSError: We couldn't connect to 'https://huggingface.co' to load the files, and "
               "couldn't find them in the cached files.")
    for line in (hub, wrapped):
        (row,) = governing((line,), "")
        assert row.governs("HF_HOME", "/home/mlsvc/.cache/huggingface")
        assert row.governs("HF_HUB_OFFLINE", "1")
        assert not row.governs("HF_TOKEN", None) and not row.governs("HOME", "/home/mlsvc")
    (offline,) = governing(("OfflineModeIsEnabled: Cannot reach https://huggingface.co/api/"
                            "models/gpt2: offline mode is enabled. To disable it, please unset "
                            "the `HF_HUB_OFFLINE` environment variable.",), "")
    assert offline.governs("HF_HUB_OFFLINE", "1") and not offline.governs("HF_HOME", "/x")
