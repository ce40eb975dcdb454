//! Rule 8, given prior events / when a command / then events or an error.

use super::*;

fn u(id: i64) -> UserId {
    UserId::try_from(id).unwrap()
}

fn id() -> PostId {
    "0190f5a2-7b6c-7def-8123-456789abcdef".parse().unwrap()
}

fn at() -> DateTime<Utc> {
    DateTime::from_timestamp_micros(1_700_000_000_000_000).unwrap()
}

fn content(text: &str) -> PostContent {
    PostContent::try_from(text.to_owned()).unwrap()
}

fn published(author: i64) -> PostEvent {
    PostEvent::PostPublished {
        post_id: id(),
        author: u(author),
        content: Some(content("hello")),
        created_at: at(),
        visibility: Visibility::Public,
        quote_of: None,
        quote_author: None,
        quote_policy: QuotePolicy::Anyone,
        comment_policy: CommentPolicy::Everyone,
    }
}

fn given(events: Vec<PostEvent>) -> Post {
    let mut post = Post::default();
    for event in events {
        post.apply(event);
    }
    post
}

fn publish(author: i64) -> PostCommand {
    PostCommand::Publish {
        post_id: id(),
        author: u(author),
        content: content("hello"),
        visibility: Visibility::Public,
        created_at: at(),
        quote_of: None,
        quote_policy: QuotePolicy::Anyone,
        comment_policy: CommentPolicy::Everyone,
    }
}

fn delete(actor: i64) -> PostCommand {
    PostCommand::Delete {
        post_id: id(),
        actor: u(actor),
    }
}

#[test]
fn content_is_1_to_2000_characters_not_bytes() {
    assert_eq!(
        PostContent::try_from(String::new()),
        Err(PostContentError::Empty)
    );
    assert!(PostContent::try_from("x".to_owned()).is_ok());
    // 2000 three-byte characters: 6000 bytes, still 2000 characters.
    assert!(PostContent::try_from("字".repeat(2000)).is_ok());
    assert_eq!(
        PostContent::try_from("字".repeat(2001)),
        Err(PostContentError::TooLong {
            max: 2000,
            got: 2001
        })
    );
    // Deserialising checks too: nothing downstream re-checks.
    assert!(serde_json::from_str::<PostContent>("\"\"").is_err());
    assert!(serde_json::from_str::<PostContent>("\"hi\"").is_ok());
}

#[test]
fn post_ids_parse_only_from_the_hyphenated_form() {
    assert_eq!(id().to_string(), "0190f5a2-7b6c-7def-8123-456789abcdef");
    assert_eq!(id().to_string().parse::<PostId>(), Ok(id()));
    for bad in [
        "",
        "1",
        "0190f5a27b6c7def8123456789abcdef",
        "{0190f5a2-7b6c-7def-8123-456789abcdef}",
        "0190f5a2-7b6c-7def-8123-456789abcdeg",
    ] {
        assert_eq!(bad.parse::<PostId>(), Err(BadPostId), "{bad:?}");
    }
}

#[test]
fn publishing_starts_the_stream() {
    assert_eq!(
        given(vec![]).decide(publish(1), QuoteJudged::default()),
        Ok(vec![published(1)])
    );
}

#[test]
fn an_id_is_published_once() {
    assert_eq!(
        given(vec![published(1)]).decide(publish(1), QuoteJudged::default()),
        Err(PostError::AlreadyExists)
    );
}

#[test]
fn only_the_author_deletes() {
    let post = given(vec![published(1)]);
    assert_eq!(
        post.decide(delete(2), QuoteJudged::default()),
        Err(PostError::NotAuthor)
    );
    assert_eq!(
        post.decide(delete(1), QuoteJudged::default()),
        Ok(vec![PostEvent::PostDeleted {
            post_id: id(),
            author: u(1)
        }])
    );
}

#[test]
fn an_unknown_or_deleted_post_is_not_found_for_anyone() {
    assert_eq!(
        given(vec![]).decide(delete(1), QuoteJudged::default()),
        Err(PostError::NotFound)
    );
    let deleted = given(vec![
        published(1),
        PostEvent::PostDeleted {
            post_id: id(),
            author: u(1),
        },
    ]);
    assert_eq!(
        deleted.decide(delete(1), QuoteJudged::default()),
        Err(PostError::NotFound)
    );
    assert_eq!(
        deleted.decide(delete(2), QuoteJudged::default()),
        Err(PostError::NotFound)
    );
    assert_eq!(
        deleted.decide(publish(1), QuoteJudged::default()),
        Err(PostError::AlreadyExists)
    );
}

#[test]
fn events_serialise_in_the_logs_externally_tagged_form() {
    let json = serde_json::to_value(published(7)).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"PostPublished": {
            "post_id": "0190f5a2-7b6c-7def-8123-456789abcdef",
            "author": 7,
            "content": "hello",
            "created_at": "2023-11-14T22:13:20Z",
            "visibility": "public",
        }})
    );
    assert_eq!(
        serde_json::from_value::<PostEvent>(json).unwrap(),
        published(7)
    );
}

#[test]
fn visibility_is_in_the_event_and_defaults_to_public_for_old_events() {
    let old = serde_json::json!({"PostPublished": {
        "post_id": id().to_string(), "author": 1, "content": "hello",
        "created_at": "2023-11-14T22:13:20Z"}});
    let event: PostEvent = serde_json::from_value(old).unwrap();
    let post = given(vec![event]);
    assert_eq!(
        post,
        Post::Live {
            author: u(1),
            visibility: Visibility::Public,
            quote_policy: QuotePolicy::Anyone,
            comment_policy: CommentPolicy::Everyone,
            quote_of: None,
            detached_by: None,
        }
    );
    let mut command = publish(1);
    if let PostCommand::Publish { visibility, .. } = &mut command {
        *visibility = Visibility::Followers;
    }
    let events = Post::default()
        .decide(command, QuoteJudged::default())
        .unwrap();
    let json = serde_json::to_value(&events[0]).unwrap();
    assert_eq!(json["PostPublished"]["visibility"], "followers");
    assert_eq!("unlisted".parse(), Ok(Visibility::Unlisted));
    assert_eq!("secret".parse::<Visibility>(), Err(BadVisibility));
}

fn other() -> PostId {
    "0190f5a2-7b6c-7def-8123-456789abcde0".parse().unwrap()
}

fn quoting(author: i64, quoted_author: i64) -> PostCommand {
    let mut command = publish(author);
    if let PostCommand::Publish { quote_of, .. } = &mut command {
        *quote_of = Some(QuoteOf {
            post: other(),
            author: u(quoted_author),
        });
    }
    command
}

fn judged(unreadable: bool, blocked: bool, not_quotable: bool) -> QuoteJudged {
    QuoteJudged {
        unreadable,
        blocked,
        not_quotable,
    }
}

#[test]
fn a_quote_is_judged_not_found_then_blocked_then_not_quotable() {
    let new = Post::default();
    let all = judged(true, true, true);
    assert_eq!(
        new.decide(quoting(1, 2), all),
        Err(PostError::QuotedNotFound)
    );
    let blocked = judged(false, true, true);
    assert_eq!(new.decide(quoting(1, 2), blocked), Err(PostError::Blocked));
    let closed = judged(false, false, true);
    assert_eq!(
        new.decide(quoting(1, 2), closed),
        Err(PostError::NotQuotable)
    );
    let events = new.decide(quoting(1, 2), QuoteJudged::default()).unwrap();
    assert_eq!(events[0].quote().map(|q| q.author), Some(u(2)));
    // A post that quotes nothing is never judged as a quote.
    assert!(new.decide(publish(1), all).is_ok());
}

#[test]
fn a_policy_lets_the_author_its_followers_or_anyone_quote() {
    use QuotePolicy::*;
    assert!(Anyone.allows(false, false));
    assert!(Followers.allows(false, true));
    assert!(!Followers.allows(false, false));
    assert!(!Nobody.allows(false, true));
    assert!(Nobody.allows(true, false));
    assert_eq!("followers".parse(), Ok(Followers));
    assert_eq!("friends".parse::<QuotePolicy>(), Err(BadQuotePolicy));
}

#[test]
fn only_the_author_changes_the_policy_and_the_same_policy_changes_nothing() {
    let post = given(vec![published(1)]);
    let set = |actor, quote_policy| PostCommand::SetQuotePolicy {
        post_id: id(),
        actor: u(actor),
        quote_policy,
    };
    let none = QuoteJudged::default();
    assert_eq!(
        post.decide(set(2, QuotePolicy::Nobody), none),
        Err(PostError::NotAuthor)
    );
    assert_eq!(post.decide(set(1, QuotePolicy::Anyone), none), Ok(vec![]));
    let changed = post.decide(set(1, QuotePolicy::Nobody), none).unwrap();
    let post = given(vec![published(1), changed[0].clone()]);
    assert!(matches!(
        post,
        Post::Live {
            quote_policy: QuotePolicy::Nobody,
            ..
        }
    ));
}

#[test]
fn only_the_quoted_author_detaches_once() {
    let none = QuoteJudged::default();
    let published = Post::default().decide(quoting(1, 2), none).unwrap();
    let post = given(published.clone());
    let detach = |actor| PostCommand::Detach {
        post_id: id(),
        actor: u(actor),
    };
    assert_eq!(
        post.decide(detach(1), none),
        Err(PostError::NotQuotedAuthor)
    );
    assert_eq!(
        post.decide(detach(3), none),
        Err(PostError::NotQuotedAuthor)
    );
    let detached = post.decide(detach(2), none).unwrap();
    assert!(matches!(detached[..], [PostEvent::QuoteDetached { .. }]));
    let post = given([published, detached].concat());
    assert_eq!(post.decide(detach(2), none), Ok(vec![]));
    assert_eq!(
        post.decide(detach(3), none),
        Err(PostError::NotQuotedAuthor)
    );
    // A post that quotes nothing has nothing to detach.
    let plain = given(vec![self::published(1)]);
    assert_eq!(
        plain.decide(detach(2), none),
        Err(PostError::NotQuotedAuthor)
    );
    let gone = given(vec![
        self::published(1),
        PostEvent::PostDeleted {
            post_id: id(),
            author: u(1),
        },
    ]);
    assert_eq!(gone.decide(detach(2), none), Err(PostError::NotFound));
}

#[test]
fn a_quote_is_in_the_event_and_old_events_read_as_quoting_nothing() {
    let events = Post::default()
        .decide(quoting(1, 2), QuoteJudged::default())
        .unwrap();
    let json = serde_json::to_value(&events[0]).unwrap();
    assert_eq!(json["PostPublished"]["quote_author"], 2);
    assert_eq!(json["PostPublished"]["quote_of"], other().to_string());
    // The default policy is left out, as in every event before quotes.
    assert!(json["PostPublished"].get("quote_policy").is_none());
    let plain = serde_json::to_value(published(1)).unwrap();
    assert!(plain["PostPublished"].get("quote_of").is_none());
    assert!(plain["PostPublished"].get("quote_author").is_none());
    let back: PostEvent = serde_json::from_value(plain).unwrap();
    assert_eq!(back, published(1));
}

#[test]
fn only_the_author_changes_who_may_comment_and_old_events_let_everyone() {
    let old = serde_json::json!({"PostPublished": {
        "post_id": id().to_string(), "author": 1, "content": "hello",
        "created_at": "2023-11-14T22:13:20Z"}});
    let post = given(vec![serde_json::from_value(old).unwrap()]);
    assert!(matches!(
        post,
        Post::Live {
            comment_policy: CommentPolicy::Everyone,
            ..
        }
    ));
    let set = |actor, comment_policy| PostCommand::SetCommentPolicy {
        post_id: id(),
        actor: u(actor),
        comment_policy,
    };
    let none = QuoteJudged::default();
    let refused = post.decide(set(2, CommentPolicy::Nobody), none);
    assert_eq!(refused, Err(PostError::NotAuthor));
    let same = post.decide(set(1, CommentPolicy::Everyone), none);
    assert_eq!(same, Ok(vec![]));
    let changed = post.decide(set(1, CommentPolicy::Followers), none).unwrap();
    let json = serde_json::to_value(&changed[0]).unwrap();
    assert_eq!(json["CommentPolicyChanged"]["comment_policy"], "followers");
    let post = given(vec![published(1), changed[0].clone()]);
    assert!(matches!(
        post,
        Post::Live {
            comment_policy: CommentPolicy::Followers,
            ..
        }
    ));
    // Published with a policy: in the event, and the default left out.
    let mut command = publish(1);
    if let PostCommand::Publish { comment_policy, .. } = &mut command {
        *comment_policy = CommentPolicy::Following;
    }
    let events = Post::default().decide(command, none).unwrap();
    let json = serde_json::to_value(&events[0]).unwrap();
    assert_eq!(json["PostPublished"]["comment_policy"], "following");
    let plain = serde_json::to_value(published(1)).unwrap();
    assert!(plain["PostPublished"].get("comment_policy").is_none());
    let gone = given(vec![
        published(1),
        PostEvent::PostDeleted {
            post_id: id(),
            author: u(1),
        },
    ]);
    let refused = gone.decide(set(1, CommentPolicy::Nobody), none);
    assert_eq!(refused, Err(PostError::NotFound));
}
