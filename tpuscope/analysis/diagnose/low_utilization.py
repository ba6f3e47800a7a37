RULE_ID = "low_device_utilization"


def run(ctx):
    return []
