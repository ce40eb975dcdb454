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
    assert_eq!(given(vec![]).decide(publish(1)), Ok(vec![published(1)]));
}

#[test]
fn an_id_is_published_once() {
    assert_eq!(
        given(vec![published(1)]).decide(publish(1)),
        Err(PostError::AlreadyExists)
    );
}

#[test]
fn only_the_author_deletes() {
    let post = given(vec![published(1)]);
    assert_eq!(post.decide(delete(2)), Err(PostError::NotAuthor));
    assert_eq!(
        post.decide(delete(1)),
        Ok(vec![PostEvent::PostDeleted {
            post_id: id(),
            author: u(1)
        }])
    );
}

#[test]
fn an_unknown_or_deleted_post_is_not_found_for_anyone() {
    assert_eq!(given(vec![]).decide(delete(1)), Err(PostError::NotFound));
    let deleted = given(vec![
        published(1),
        PostEvent::PostDeleted {
            post_id: id(),
            author: u(1),
        },
    ]);
    assert_eq!(deleted.decide(delete(1)), Err(PostError::NotFound));
    assert_eq!(deleted.decide(delete(2)), Err(PostError::NotFound));
    assert_eq!(deleted.decide(publish(1)), Err(PostError::AlreadyExists));
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
            visibility: Visibility::Public
        }
    );
    let mut command = publish(1);
    if let PostCommand::Publish { visibility, .. } = &mut command {
        *visibility = Visibility::Followers;
    }
    let events = Post::default().decide(command).unwrap();
    let json = serde_json::to_value(&events[0]).unwrap();
    assert_eq!(json["PostPublished"]["visibility"], "followers");
    assert_eq!("unlisted".parse(), Ok(Visibility::Unlisted));
    assert_eq!("secret".parse::<Visibility>(), Err(BadVisibility));
}
