RULE_ID = "step_time_variance"


def run(ctx):
    return []
