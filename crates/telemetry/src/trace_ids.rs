//! Trace ids without spans to export. When nothing exports spans, a traced
//! span needs only its W3C context: the trace it belongs to (the caller's,
//! when the caller sent one), an id of its own, and the caller's flags and
//! state, to forward downstream and to write on log lines and audit events.
//! [`IdsLayer`] keeps exactly that in the span's extensions, where the
//! OpenTelemetry layer would build a span (its name, attributes, times and
//! status) only to drop it when it closes.
//!
//! The readers in this crate ([`span_context`], [`set_parent`], the log
//! lines) read whichever of the two layers is installed.

use opentelemetry::{
    Context,
    trace::{SpanContext, TraceContextExt as _, TraceFlags, TraceState},
};
use opentelemetry_sdk::trace::{IdGenerator as _, RandomIdGenerator};
use tracing::{Subscriber, span};
use tracing_opentelemetry::OpenTelemetrySpanExt as _;
use tracing_subscriber::{
    Layer, Registry,
    layer::Context as LayerContext,
    registry::{LookupSpan, SpanRef},
};

/// A traced span's W3C context, kept by [`IdsLayer`].
#[derive(Debug, Clone)]
pub(crate) struct Ids(pub(crate) SpanContext);

/// Gives every span it sees a [`Ids`]: its parent's trace, flags and state
/// with a new span id, or a new sampled trace when it has no traced parent
/// (as the tracer's default sampler, parent-based and always on, decides).
#[derive(Debug, Default)]
pub(crate) struct IdsLayer {
    ids: RandomIdGenerator,
}

impl<S> Layer<S> for IdsLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &span::Attributes<'_>, id: &span::Id, ctx: LayerContext<'_, S>) {
        let Some(span) = ctx.span(id) else {
            return;
        };
        let parent = if attrs.is_root() {
            None
        } else if let Some(parent) = attrs.parent() {
            ctx.span(parent)
        } else {
            ctx.lookup_current()
        };
        let parent = parent.and_then(|parent| parent.extensions().get::<Ids>().cloned());
        let span_id = self.ids.new_span_id();
        let context = match parent {
            Some(Ids(parent)) => SpanContext::new(
                parent.trace_id(),
                span_id,
                parent.trace_flags(),
                false,
                parent.trace_state().clone(),
            ),
            None => SpanContext::new(
                self.ids.new_trace_id(),
                span_id,
                TraceFlags::SAMPLED,
                false,
                TraceState::default(),
            ),
        };
        span.extensions_mut().insert(Ids(context));
    }
}

/// `span`'s W3C context: invalid when `span` is not traced.
pub fn span_context(span: &tracing::Span) -> SpanContext {
    let ids = span.with_subscriber(|(id, dispatch)| {
        let registry = dispatch.downcast_ref::<Registry>()?;
        kept(&registry.span(id)?)
    });
    match ids.flatten() {
        Some(context) => context,
        None => span.context().span().span_context().clone(),
    }
}

/// `span`'s context as an OpenTelemetry [`Context`], for propagators.
pub(crate) fn context_of(span: &tracing::Span) -> Context {
    let context = span_context(span);
    if context.is_valid() {
        Context::new().with_remote_span_context(context)
    } else {
        Context::new()
    }
}

/// Makes `parent` (a caller's context, say) the parent of `span`, which
/// must not have spans of its own yet: `span` joins `parent`'s trace, with
/// its flags and state. A `parent` with no valid span context changes
/// nothing; neither does a `span` no layer traces.
pub fn set_parent(span: &tracing::Span, parent: Context) {
    let parent_span = parent.span();
    let parent_context = parent_span.span_context();
    let updated = span.with_subscriber(|(id, dispatch)| {
        let registry = dispatch.downcast_ref::<Registry>()?;
        let span = registry.span(id)?;
        let mut extensions = span.extensions_mut();
        let Ids(own) = extensions.get_mut::<Ids>()?;
        if parent_context.is_valid() {
            *own = SpanContext::new(
                parent_context.trace_id(),
                own.span_id(),
                parent_context.trace_flags(),
                false,
                parent_context.trace_state().clone(),
            );
        }
        Some(())
    });
    if updated.flatten().is_none() {
        // Fails only when no OpenTelemetry layer is installed either; then
        // there is nothing to join.
        let _ = span.set_parent(parent);
    }
}

/// The context [`IdsLayer`] keeps for `span`, if it keeps one.
pub(crate) fn kept(span: &SpanRef<'_, Registry>) -> Option<SpanContext> {
    span.extensions()
        .get::<Ids>()
        .map(|Ids(context)| context.clone())
}

#[cfg(test)]
mod tests;
