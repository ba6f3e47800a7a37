"""Did a change help: two runs compared step by step (`runs`), op by op across recompilations
(`ops`), with intervals that tell a change from noise (`statistics`)."""
