RULE_ID = "straggler"


def run(ctx):
    return []
