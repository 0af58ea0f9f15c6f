package reports

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The parameters a report:<type> skill sends from a message are valid for
// every template (a refused request would make the skill answer as chat).
func TestParametersFromAMessageAreValidForEveryTemplate(t *testing.T) {
	for _, typ := range Types {
		p := ParametersFrom(typ, "Review the auth module for bugs")
		raw, err := json.Marshal(p)
		require.NoError(t, err)
		_, err = validateParams(Templates[typ], raw)
		assert.NoError(t, err, typ)
	}
	assert.Nil(t, ParametersFrom("haiku", "x"))
}
