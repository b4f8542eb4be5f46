package sim

// Shrink looks for a simpler failing run of res's seed: it turns off one
// kind of fault at a time and keeps each change that still fails, then
// cuts the fault steps to the failure's. The same seed with fewer kinds
// of faults is a shorter story to read.
func Shrink(res *Result) *Result {
	best := res
	knobs := []func(*Config){
		func(c *Config) { c.CrashRate = 0 },
		func(c *Config) { c.StatementFaultRate = 0 },
		func(c *Config) { c.RedisLossRate = 0 },
		func(c *Config) { c.ContradictRate = 0 },
		func(c *Config) { c.ReturnRate = 0 },
		func(c *Config) { c.DelayRate = 0 },
		func(c *Config) { c.LostAnswerRate = 0 },
		func(c *Config) { c.VendorDownRate = 0 },
		func(c *Config) { c.RejectRate = 0 },
		func(c *Config) { c.InstantRate = 0 },
	}
	for _, knob := range knobs {
		cfg := best.Config
		knob(&cfg)
		if cfg == best.Config {
			continue
		}
		if r := RunConfig(res.Seed, cfg); r.Err != nil && len(r.History) <= len(best.History) {
			best = r
		}
	}
	if best.Steps < best.Config.Steps {
		cfg := best.Config
		cfg.Steps = best.Steps
		if r := RunConfig(res.Seed, cfg); r.Err != nil {
			best = r
		}
	}
	return best
}
