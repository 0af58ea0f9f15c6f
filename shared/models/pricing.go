package models

// Price is the cost of one million tokens in US dollars.
type Price struct {
	InputPerMTok  float64
	OutputPerMTok float64
}

// Pricing maps model ids to prices. Unknown models cost nothing here and are
// flagged by callers; keep it in step with the providers' price lists.
var Pricing = map[string]Price{
	"local-deterministic":                       {0, 0},
	"anthropic.claude-3-haiku-20240307-v1:0":    {0.25, 1.25},
	"anthropic.claude-3-5-sonnet-20240620-v1:0": {3, 15},
	"anthropic.claude-3-5-haiku-20241022-v1:0":  {0.8, 4},
	"amazon.nova-micro-v1:0":                    {0.035, 0.14},
	"amazon.nova-lite-v1:0":                     {0.06, 0.24},
	"amazon.nova-pro-v1:0":                      {0.8, 3.2},
}

// Cost returns the price of a call in US dollars.
func Cost(modelID string, in, out int) float64 {
	p := Pricing[modelID]
	return (float64(in)*p.InputPerMTok + float64(out)*p.OutputPerMTok) / 1e6
}
