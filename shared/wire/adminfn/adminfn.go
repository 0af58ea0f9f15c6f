// Package adminfn wires the "admin" function (operator actions invoked
// directly). It links DynamoDB only.
package adminfn

import (
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/store/teamstore"
	"github.com/conclave-ai/conclave/shared/team/admin"
	"github.com/conclave-ai/conclave/shared/team/teams"
)

// Build implements lambdafn.Build.
func Build(d lambdafn.Deps) (any, error) {
	core := dynamo.FromConfig(d.AWS, d.Config.TableName)
	return (&admin.Handler{Teams: teams.NewService(teamstore.New(core.DB, core.Table)), Log: d.Log}).Handle, nil
}
