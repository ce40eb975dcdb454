//! cqrs-es's aggregate model for the aggregates here: the store loads and folds streams through
//! these traits, and decides through `handle`.

use cqrs_es::event_sink::EventSink;
use cqrs_es::{Aggregate, DomainEvent};

use crate::account::{Account, AccountCommand, AccountError, AccountEvent};
use crate::pair::{FollowBudget, RelationCommand, RelationError, RelationEvent, RelationPair};
use crate::post::{Post, PostCommand, PostError, PostEvent};

impl DomainEvent for RelationEvent {
    fn event_type(&self) -> String {
        RelationEvent::event_type(self).to_owned()
    }

    fn event_version(&self) -> String {
        RelationEvent::event_version(self).to_owned()
    }
}

impl Aggregate for RelationPair {
    const TYPE: &'static str = RelationPair::TYPE;
    type Command = RelationCommand;
    type Event = RelationEvent;
    type Error = RelationError;
    type Services = FollowBudget;

    async fn handle(
        &mut self,
        command: Self::Command,
        budget: &Self::Services,
        sink: &EventSink<Self>,
    ) -> Result<(), Self::Error> {
        for event in self.decide(command, *budget)? {
            sink.write(event, self).await;
        }
        Ok(())
    }

    fn apply(&mut self, event: Self::Event) {
        RelationPair::apply(self, event);
    }
}

/// cqrs-es's traits for an aggregate that decides without services: its event's
/// `event_type`/`event_version`, and `handle`/`apply` through its own `decide`/`apply`.
macro_rules! plain_aggregate {
    ($aggregate:ident, $command:ident, $event:ident, $error:ident) => {
        impl DomainEvent for $event {
            fn event_type(&self) -> String {
                $event::event_type(self).to_owned()
            }

            fn event_version(&self) -> String {
                $event::event_version(self).to_owned()
            }
        }

        impl Aggregate for $aggregate {
            const TYPE: &'static str = $aggregate::TYPE;
            type Command = $command;
            type Event = $event;
            type Error = $error;
            type Services = ();

            async fn handle(
                &mut self,
                command: Self::Command,
                _: &Self::Services,
                sink: &EventSink<Self>,
            ) -> Result<(), Self::Error> {
                for event in self.decide(command)? {
                    sink.write(event, self).await;
                }
                Ok(())
            }

            fn apply(&mut self, event: Self::Event) {
                $aggregate::apply(self, event);
            }
        }
    };
}

plain_aggregate!(Post, PostCommand, PostEvent, PostError);
plain_aggregate!(Account, AccountCommand, AccountEvent, AccountError);
