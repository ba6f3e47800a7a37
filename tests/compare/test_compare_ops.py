"""Op keys that survive recompilation."""

from __future__ import annotations

from tpuscope.analysis.compare.ops import computation_key, program_key


def test_hlo_text_key_drops_the_instruction_name_instance_numbers_and_ids():
    a = (
        "%fusion.123 = bf16[8,128]{1,0} fusion(bf16[8,128]{1,0} %param.4, f32[] %copy.17), kind=kLoop, "
        "calls=%fused_computation.12"
    )
    b = (
        "%fusion.131 = bf16[8,128]{1,0} fusion(bf16[8,128]{1,0} %param.9, f32[] %copy.2), kind=kLoop, "
        "calls=%fused_computation.40"
    )
    assert computation_key(a) == computation_key(b)
    assert computation_key(a)[1] is True
    other_shape = a.replace("bf16[8,128]", "bf16[16,128]")
    assert computation_key(other_shape) != computation_key(a)
    reduce_a = "%all-reduce.1 = f32[4] all-reduce(f32[4] %x.2), channel_id=1, to_apply=%region_0.3.clone"
    reduce_b = "%all-reduce.7 = f32[4] all-reduce(f32[4] %x.5), channel_id=9, to_apply=%region_0.8"
    assert computation_key(reduce_a) == computation_key(reduce_b)


def test_plain_names_lose_only_their_instance_numbers():
    assert computation_key("wrapped_multiply.1") == ("wrapped_multiply", False)
    assert computation_key("multiply_subtract_fusion") == ("multiply_subtract_fusion", False)
    assert computation_key("sort.0")[0] == computation_key("sort.14")[0]


def test_program_key_drops_the_program_id():
    assert program_key("jit_train_step(12)") == "jit_train_step"
    assert program_key("jit_f(11287434908481120160)") == "jit_f"
    assert program_key("program 7") == "(unnamed program)"


def test_category_and_program_tables_equal_the_event_aggregates_on_the_tpu_sample():
    from tests.conftest import TPU_TRACE, require_shared_traces
    from tpuscope.analysis.compare.runs import analyze_run, compare_runs
    from tpuscope.analysis.ops import aggregate
    from tpuscope.analysis.session import TraceAnalysis
    from tpuscope.app.opener import open_trace

    require_shared_traces()
    run = analyze_run(TraceAnalysis(open_trace(TPU_TRACE, use_cache=False)))
    c = compare_runs(run, run)
    for by, table in (("category", c.categories), ("program", c.programs)):
        grouped = aggregate(run.overview.ops.events, by)
        expected: dict[str, float] = {}
        for name, self_ps in zip(grouped.names(), grouped.self_ps, strict=True):
            key = program_key(name) if by == "program" else name
            expected[key] = expected.get(key, 0.0) + float(self_ps) / run.steps
        assert {r.name: r.base_self_ps for r in table.rows} == expected
