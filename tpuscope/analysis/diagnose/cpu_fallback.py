RULE_ID = "cpu_fallback"


def run(ctx):
    return []
