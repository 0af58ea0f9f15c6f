package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/api/plansapi"
	"github.com/conclave-ai/conclave/shared/platform/authctx"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/testkit/demo"
	"github.com/conclave-ai/conclave/shared/work/plans"
)

// as serves one request for a caller's authorizer context.
func (a inMemoryAPI) as(lc map[string]any, routeKey, path, body string, params map[string]string) events.APIGatewayV2HTTPResponse {
	method, _, _ := strings.Cut(routeKey, " ")
	resp, _ := a.rt.Serve(context.Background(), events.APIGatewayV2HTTPRequest{
		RouteKey: routeKey, RawPath: path, Body: body, PathParameters: params,
		RequestContext: events.APIGatewayV2HTTPRequestContext{RequestID: "mine",
			HTTP:       events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: path},
			Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{Lambda: lc}},
	})
	return resp
}

// What a member starts (a task, a session, a report, a plan) is theirs: another
// member gets 404 naming it and lists none of it; its member, an admin
// and a key read it, and the member's listing holds only their own.
func TestWhatAMemberStartsIsNotFoundToAnotherMember(t *testing.T) {
	a := newInMemoryAPI(t)
	caller := func(user, role string) map[string]any {
		lc := map[string]any{authctx.TeamID: demo.TeamID}
		if user != "" {
			lc[authctx.UserID], lc[authctx.Role] = user, role
		} else {
			lc[authctx.KeyID] = "key_1"
		}
		return lc
	}
	alice, bob := caller("alice", authctx.RoleMember), caller("bob", authctx.RoleMember)
	admin, key := caller("root", authctx.RoleAdmin), caller("", "")
	// A plan starts from a chat turn, never from the API: alice's is the
	// one her turn would have written (user_id), straight into the store.
	plansapi.PlanRoutes(a.rt, &plans.Service{Store: a.store, Now: time.Now})
	startPlan := func(t *testing.T, lc map[string]any) string {
		now := time.Now().UTC()
		user, _ := lc[authctx.UserID].(string)
		p := plans.Plan{TeamID: demo.TeamID, ID: ids.New("plan"), Lead: "kyra", Message: "m", Trigger: "test", Status: plans.Running,
			RootTaskID: ids.New("task"), Version: 1, CreatedAt: now, UpdatedAt: now, UserID: user}
		require.NoError(t, a.store.CreatePlan(context.Background(), p))
		return p.ID
	}
	for _, tc := range []struct {
		kind, base, body string
		start            func(*testing.T, map[string]any) string // nil: POST base with body
	}{
		{"task", "/v1/tasks", `{"assignee":"kyra","title":"alice's"}`, nil},
		{"session", "/v1/sessions", `{"pattern":"brainstorm","lead":"kyra","goal":"g","participants":[{"agent":"luke","role":"contributor"},{"agent":"dana","role":"contributor"}]}`, nil},
		{"report", "/v1/reports", `{"type":"code_review","to":"luke","title":"t","parameters":{"files":["src/"]}}`, nil},
		{"plan", "/v1/plans", "", startPlan},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			// GIVEN one of alice's and one of the key's own
			made := map[string]string{}
			for name, lc := range map[string]map[string]any{"alice": alice, "key": key} {
				if tc.start != nil {
					made[name] = tc.start(t, lc)
					continue
				}
				resp := a.as(lc, "POST "+tc.base, tc.base, tc.body, nil)
				require.Equal(t, http.StatusCreated, resp.StatusCode, resp.Body)
				var v struct {
					ID string `json:"id"`
				}
				require.NoError(t, json.Unmarshal([]byte(resp.Body), &v))
				made[name] = v.ID
			}
			get := func(lc map[string]any, id string) events.APIGatewayV2HTTPResponse {
				return a.as(lc, "GET "+tc.base+"/{id}", tc.base+"/"+id, "", map[string]string{"id": id})
			}
			listed := func(lc map[string]any) []string {
				resp := a.as(lc, "GET "+tc.base, tc.base, "", nil)
				require.Equal(t, http.StatusOK, resp.StatusCode, resp.Body)
				var l struct {
					Items []struct {
						ID string `json:"id"`
					} `json:"items"`
				}
				require.NoError(t, json.Unmarshal([]byte(resp.Body), &l))
				ids := []string{}
				for _, it := range l.Items {
					if it.ID == made["alice"] || it.ID == made["key"] {
						ids = append(ids, it.ID)
					}
				}
				return ids
			}

			// THEN another member gets 404 on both and lists neither
			for _, id := range made {
				resp := get(bob, id)
				assert.Equal(t, http.StatusNotFound, resp.StatusCode, resp.Body)
				assert.Contains(t, resp.Body, tc.kind+` \"`+id+`\" not found`)
			}
			assert.Empty(t, listed(bob))
			// alice reads hers only; an admin and a key read both
			assert.Equal(t, http.StatusOK, get(alice, made["alice"]).StatusCode)
			assert.Equal(t, http.StatusNotFound, get(alice, made["key"]).StatusCode, "a key's own is no member's")
			assert.Equal(t, []string{made["alice"]}, listed(alice))
			for _, lc := range []map[string]any{admin, key} {
				for _, id := range made {
					assert.Equal(t, http.StatusOK, get(lc, id).StatusCode)
				}
				assert.ElementsMatch(t, []string{made["alice"], made["key"]}, listed(lc))
			}
		})
	}
}
