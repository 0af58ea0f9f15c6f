// Package reportfinalizerfn wires the "report-finalizer" function: every
// TaskStatusChanged (bus → rule → SQS) of a report's task brings the
// report up to date, and the end of the task finishes it (sections,
// validation, the procedural memory, ReportFinished). The end of a
// consultation's task (a specialist answering a chat reply's or a task's
// consultation) records the answer, or escalates the consultation
// (consultations.Service.SyncTask): the same kind of work, a record a
// task produces. It links DynamoDB, EventBridge, and SQS to dead-letter
// an event whose attempts are used up.
package reportfinalizerfn

import (
	"context"

	"github.com/conclave-ai/conclave/shared/aws/eventbus"
	"github.com/conclave-ai/conclave/shared/platform/consumers"
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/store/consultationstore"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/store/reportstore"
	"github.com/conclave-ai/conclave/shared/store/taskstore"
	"github.com/conclave-ai/conclave/shared/wire/consumerwiring"
	"github.com/conclave-ai/conclave/shared/work/consultations"
	"github.com/conclave-ai/conclave/shared/work/reports"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// Build implements lambdafn.Build.
func Build(d lambdafn.Deps) (any, error) {
	core := dynamo.FromConfig(d.AWS, d.Config.TableName)
	bus := eventbus.FromConfig(d.AWS, d.Config.BusName)
	// The task service only reads here (no workflows, no bus).
	svc := &reports.Service{Store: reportstore.New(core.DB, core.Table), Tasks: tasks.NewService(taskstore.New(core.DB, core.Table), nil, nil, d.Log), Bus: bus, Log: d.Log}
	// The consultations' half: no model, gate or memories (it only
	// records what the specialist's task answered).
	cstore := consultationstore.New(core.DB, core.Table)
	cons := &consultations.Service{Store: cstore, Dir: cstore, Bus: bus, Specialists: svc.Tasks, Log: d.Log}
	valid := func(ev tasks.TaskStatusChanged) bool { return ev.TeamID != "" && ev.TaskID != "" }
	retry, err := consumerwiring.Retry(d, core)
	if err != nil {
		return nil, err
	}
	h := consumers.For("TaskStatusChanged", d.Log, valid, func(ctx context.Context, ev tasks.TaskStatusChanged) error {
		if consultations.ConcernsTask(ev) {
			c, err := cons.SyncTask(ctx, ev.TeamID, ev.ConsultationID)
			if err == nil {
				d.Log.InfoContext(ctx, "consultation synced", "consultation_id", c.ID, "status", string(c.Status))
			}
			return err
		}
		if !reports.Concerns(ev) {
			return nil
		}
		r, err := svc.Sync(ctx, ev.TeamID, ev.ReportID)
		if err == nil {
			d.Log.InfoContext(ctx, "report synced", "status", string(r.Status))
		}
		return err
	})
	h.Retry = retry
	return h.Handle, nil
}
