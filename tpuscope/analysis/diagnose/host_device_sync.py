RULE_ID = "host_device_sync"


def run(ctx):
    return []
