package tasks

import (
	"context"
	"time"
)

// The due-date part of fakeStore (overdue.go): no due entries, the zero
// board policy.
func (f *fakeStore) OverdueTasks(context.Context, time.Time, int) ([]Ref, error) { return nil, nil }
func (f *fakeStore) DropDueEntry(context.Context, Ref) error                     { return nil }
func (f *fakeStore) GetBoardPolicy(context.Context, string) (BoardPolicy, error) {
	return BoardPolicy{}, nil
}
func (f *fakeStore) PutBoardPolicy(context.Context, string, BoardPolicy) error { return nil }
