// Package logctx carries log attributes in a context: the bootstrap puts the
// Lambda request id there, the HTTP layer the team and route, the task
// steps the task, so every line a function logs with a context says which
// invocation, team and task (or session) it belongs to, without threading a
// logger through every call. Standard library only.
package logctx

import (
	"context"
	"log/slog"
)

type key struct{}

// With returns ctx carrying attrs after the ones it already carries (a
// later value of the same key replaces the earlier one in the lines the
// Handler writes).
func With(ctx context.Context, args ...any) context.Context {
	if len(args) == 0 {
		return ctx
	}
	prev, _ := ctx.Value(key{}).([]slog.Attr)
	attrs := make([]slog.Attr, len(prev), len(prev)+len(args)/2)
	copy(attrs, prev)
	r := slog.Record{}
	r.Add(args...)
	r.Attrs(func(a slog.Attr) bool {
		attrs = append(attrs, a)
		return true
	})
	return context.WithValue(ctx, key{}, attrs)
}

// Attrs are the attributes ctx carries.
func Attrs(ctx context.Context) []slog.Attr {
	if ctx == nil {
		return nil
	}
	attrs, _ := ctx.Value(key{}).([]slog.Attr)
	return attrs
}

// Handler adds the context's attributes to every record it handles.
type Handler struct{ inner slog.Handler }

// Wrap returns log with a Handler in front of its handler (once: wrapping
// a wrapped logger returns it as it is).
func Wrap(log *slog.Logger) *slog.Logger {
	if _, ok := log.Handler().(Handler); ok {
		return log
	}
	return slog.New(Handler{inner: log.Handler()})
}

// Enabled implements slog.Handler.
func (h Handler) Enabled(ctx context.Context, l slog.Level) bool { return h.inner.Enabled(ctx, l) }

// Handle implements slog.Handler. Every key is written once: a key the
// line sets itself (the call site knows best) is not added again from the
// context, and of a key the context carries twice only the later value is
// added (slog's JSON handler would write both, and readers of duplicate
// keys disagree on which one counts).
func (h Handler) Handle(ctx context.Context, r slog.Record) error {
	attrs := Attrs(ctx)
	if len(attrs) == 0 {
		return h.inner.Handle(ctx, r)
	}
	own := make(map[string]bool, r.NumAttrs())
	r.Attrs(func(a slog.Attr) bool {
		own[a.Key] = true
		return true
	})
	r = r.Clone()
	for i, a := range attrs {
		if own[a.Key] || laterKey(attrs[i+1:], a.Key) {
			continue
		}
		r.AddAttrs(a)
	}
	return h.inner.Handle(ctx, r)
}

// laterKey reports whether attrs has key (the context's attributes are a
// handful: a scan beats a map).
func laterKey(attrs []slog.Attr, key string) bool {
	for _, a := range attrs {
		if a.Key == key {
			return true
		}
	}
	return false
}

// WithAttrs implements slog.Handler.
func (h Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return Handler{inner: h.inner.WithAttrs(attrs)}
}

// WithGroup implements slog.Handler.
func (h Handler) WithGroup(name string) slog.Handler { return Handler{inner: h.inner.WithGroup(name)} }

// Bind returns log with ctx's attributes attached, for code that logs
// without a context (an error path that has only the request). Its lines
// carry the attributes once: the context-reading Handler is taken off.
func Bind(log *slog.Logger, ctx context.Context) *slog.Logger {
	h := log.Handler()
	if w, ok := h.(Handler); ok {
		h = w.inner
	}
	attrs := Attrs(ctx)
	if len(attrs) == 0 {
		return slog.New(h)
	}
	return slog.New(h.WithAttrs(attrs))
}
