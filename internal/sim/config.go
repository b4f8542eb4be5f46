package sim

import "math/rand/v2"

// Config is one run's shape. Each seed draws its own (swarm testing): some
// seeds run with no crashes and many lost answers, others the reverse, so
// that faults rare in one are common in another.
type Config struct {
	Steps   int // steps with faults, before the liveness phase
	Wallets int

	VendorDownRate     float64 // a vendor call refused (503), nothing made
	DelayRate          float64 // a submit held on its way (taken within requestWindow)
	LostAnswerRate     float64 // a submit made, its answer lost
	RejectRate         float64 // a submit rejected (closed account)
	InstantRate        float64 // a submit paid at once
	StatementFaultRate float64 // a statement's connection dropped, its answer lost, or its process killed
	CrashRate          float64 // a process killed between steps
	RedisLossRate      float64 // the queue loses everything
	ReturnRate         float64 // a paid payout returned by the bank (within two days)
	ContradictRate     float64 // the vendor reports failed a payout it paid
	ReceiverDownRate   float64 // the merchant's webhook receiver refuses or answers 500
}

// drawConfig draws a run's Config from its generator.
func drawConfig(r *rand.Rand, steps int) Config {
	pick := func(max float64) float64 {
		if r.IntN(3) == 0 {
			return 0
		}
		return r.Float64() * max
	}
	return Config{
		Steps:              steps,
		Wallets:            1 + r.IntN(3),
		VendorDownRate:     pick(0.2),
		DelayRate:          pick(0.15),
		LostAnswerRate:     pick(0.2),
		RejectRate:         pick(0.1),
		InstantRate:        pick(0.5),
		StatementFaultRate: pick(0.02),
		CrashRate:          pick(0.05),
		RedisLossRate:      pick(0.01),
		ReturnRate:         pick(0.05),
		ContradictRate:     pick(0.01),
		ReceiverDownRate:   pick(0.3),
	}
}
