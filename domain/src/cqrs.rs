//! cqrs-es's aggregate model for the aggregates here: the store loads and folds streams through
//! these traits, and decides through `handle`.

use cqrs_es::event_sink::EventSink;
use cqrs_es::{Aggregate, DomainEvent};

use crate::account::{Account, AccountCommand, AccountError, AccountEvent};
use crate::bookmark::{Bookmark, BookmarkCommand, BookmarkError, BookmarkEvent, BookmarkServices};
use crate::filters::{FilterCommand, FilterError, FilterEvent, UserFilters};
use crate::like::{Like, LikeCommand, LikeError, LikeEvent, LikeServices};
use crate::lists::{ListCommand, ListError, ListEvent, ListServices, UserLists};
use crate::pair::{FollowBudget, RelationCommand, RelationError, RelationEvent, RelationPair};
use crate::post::{Post, PostCommand, PostError, PostEvent, QuoteJudged};
use crate::repost::{Repost, RepostCommand, RepostError, RepostEvent, RepostServices};
use crate::thread::{Thread, ThreadCommand, ThreadError, ThreadEvent, ThreadServices};

/// cqrs-es's traits for an aggregate: its event's `event_type`/`event_version`, and
/// `handle`/`apply` through its own `decide`/`apply`. With a services type, `decide` takes the
/// services (what the store read under lock beside the stream); without, it takes none.
macro_rules! aggregate {
    ($aggregate:ident, $command:ident, $event:ident, $error:ident) => {
        aggregate!(@impl $aggregate, $command, $event, $error, (), |state, command, _services| {
            state.decide(command)
        });
    };
    ($aggregate:ident, $command:ident, $event:ident, $error:ident, $services:ident) => {
        aggregate!(@impl $aggregate, $command, $event, $error, $services,
            |state, command, services| state.decide(command, services.clone()));
    };
    (@impl $aggregate:ident, $command:ident, $event:ident, $error:ident, $services:ty,
        |$state:ident, $cmd:ident, $svc:ident| $decide:expr) => {
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
            type Services = $services;

            async fn handle(
                &mut self,
                command: Self::Command,
                services: &Self::Services,
                sink: &EventSink<Self>,
            ) -> Result<(), Self::Error> {
                let ($state, $cmd, $svc) = (&*self, command, services);
                for event in $decide? {
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

aggregate!(Post, PostCommand, PostEvent, PostError, QuoteJudged);
aggregate!(Account, AccountCommand, AccountEvent, AccountError);
aggregate!(
    RelationPair,
    RelationCommand,
    RelationEvent,
    RelationError,
    FollowBudget
);
aggregate!(
    Thread,
    ThreadCommand,
    ThreadEvent,
    ThreadError,
    ThreadServices
);
aggregate!(Like, LikeCommand, LikeEvent, LikeError, LikeServices);
aggregate!(
    Repost,
    RepostCommand,
    RepostEvent,
    RepostError,
    RepostServices
);
aggregate!(
    Bookmark,
    BookmarkCommand,
    BookmarkEvent,
    BookmarkError,
    BookmarkServices
);
aggregate!(UserLists, ListCommand, ListEvent, ListError, ListServices);
aggregate!(UserFilters, FilterCommand, FilterEvent, FilterError);
