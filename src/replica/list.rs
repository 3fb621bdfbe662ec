//! ListTasks: the caller's tasks in the store, the most recently saved first, filtered by
//! context, state and status time, in pages.
//!
//! The rules are a2a-sdk 1.3.0's (`request_handlers/default_request_handler_v2.py`,
//! `on_list_tasks`; measured in docs/CONFORMANCE.md): `pageSize` 1 to 100, 50 when unset;
//! `historyLength` as on GetTask; artifacts left out unless `includeArtifacts`; a bad page
//! size, page token or history length is `-32602`; the last page's `nextPageToken` is
//! empty. The page token is this replica's own opaque cursor: the hex of
//! `{"after": "<the last task id of the page before>"}`.
//!
//! Knobs read: `auth.owner` (only the caller's tasks are listed).

use a2a::{ListTasksRequest, ListTasksResponse, TaskState};
use serde_json::{json, Value};

use super::rpc::{check_history_length, trim_history};
use super::{rpc, Caller, Refusal, Replica};

/// The page size when a request names none, and the largest one allowed (a2a-sdk 1.3.0).
const PAGE_SIZE_DEFAULT: usize = 50;
const PAGE_SIZE_MAX: i32 = 100;

impl Replica {
    /// ListTasks: one page of the caller's tasks that pass the request's filters.
    pub(super) async fn list_tasks(
        &self,
        p: &ListTasksRequest,
        caller: &Caller,
    ) -> Result<Value, Refusal> {
        let page_size = match p.page_size {
            None => PAGE_SIZE_DEFAULT,
            Some(n) if n < 1 => return Err(rpc(-32602, "minimum page size is 1")),
            Some(n) if n > PAGE_SIZE_MAX => return Err(rpc(-32602, "maximum page size is 100")),
            Some(n) => usize::try_from(n).unwrap_or(PAGE_SIZE_DEFAULT),
        };
        check_history_length(p.history_length)?;
        let after = match p.page_token.as_deref() {
            None | Some("") => None,
            Some(token) => Some(
                decode_cursor(token)
                    .ok_or_else(|| rpc(-32602, "page token is not a valid cursor"))?,
            ),
        };
        let all = self.links.store.list().await.map_err(|e| rpc(-32603, e))?;
        let state = p.status.as_ref().filter(|s| **s != TaskState::Unspecified);
        let matching: Vec<_> = all
            .into_iter()
            .filter(|t| self.may_touch(caller, t))
            .filter(|t| p.context_id.as_ref().is_none_or(|c| *c == t.context_id))
            .filter(|t| state.is_none_or(|s| t.status.state == *s))
            .filter(|t| {
                p.status_timestamp_after
                    .is_none_or(|after| t.status.timestamp.is_some_and(|ts| ts >= after))
            })
            .collect();
        let start = match &after {
            None => 0,
            Some(id) => {
                matching
                    .iter()
                    .position(|t| t.id == *id)
                    .ok_or_else(|| rpc(-32602, "page token names no listed task"))?
                    + 1
            }
        };
        let total = matching.len();
        let page: Vec<_> = matching
            .into_iter()
            .skip(start)
            .take(page_size)
            .map(|mut t| {
                trim_history(&mut t, p.history_length);
                if !p.include_artifacts.unwrap_or(false) {
                    t.artifacts = None;
                }
                t
            })
            .collect();
        let next = if start + page.len() < total {
            page.last()
                .map(|t| encode_cursor(&t.id))
                .unwrap_or_default()
        } else {
            String::new()
        };
        let answer = ListTasksResponse {
            tasks: page,
            next_page_token: next,
            page_size: i32::try_from(page_size).unwrap_or(PAGE_SIZE_MAX),
            total_size: i32::try_from(total).unwrap_or(i32::MAX),
        };
        Ok(serde_json::to_value(answer).expect("a task list serialises"))
    }
}

/// The page token that continues after task `id`.
fn encode_cursor(id: &str) -> String {
    json!({ "after": id })
        .to_string()
        .bytes()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The task id a page token continues after; `None` for anything but a token of ours.
fn decode_cursor(token: &str) -> Option<String> {
    if token.len() % 2 != 0 || !token.is_ascii() {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..token.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&token[i..i + 2], 16).ok())
        .collect();
    let value: Value = serde_json::from_slice(&bytes?).ok()?;
    value.get("after")?.as_str().map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_round_trips_and_garbage_is_no_cursor() {
        assert_eq!(
            decode_cursor(&encode_cursor("task-1")).as_deref(),
            Some("task-1")
        );
        for bad in ["garbage", "abc", "zz", "7b7d", ""] {
            assert_eq!(decode_cursor(bad), None, "{bad}");
        }
    }
}
