package routing

// TiersOrDefault is the tier → model map a stage configures (MODEL_TIERS),
// or DefaultTierModels when it configures none.
func TiersOrDefault(m map[string]string) TierModels {
	if len(m) == 0 {
		return DefaultTierModels
	}
	return TierModels(m)
}
