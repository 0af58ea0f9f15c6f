// Package adminfn wires the "admin" function (operator actions invoked
// directly). It links DynamoDB only.
package adminfn

import (
	"github.com/conclave-ai/conclave/shared/admin"
	"github.com/conclave-ai/conclave/shared/dynamo"
	"github.com/conclave-ai/conclave/shared/dynamo/teamstore"
	"github.com/conclave-ai/conclave/shared/lambdafn"
	"github.com/conclave-ai/conclave/shared/teams"
)

// Build implements lambdafn.Build.
func Build(d lambdafn.Deps) (any, error) {
	core := dynamo.FromConfig(d.AWS, d.Config.TableName)
	return (&admin.Handler{Teams: teams.NewService(teamstore.New(core.DB, core.Table)), Log: d.Log}).Handle, nil
}
