//! Tests of the 0.3 translation: each shape against a2a-sdk 1.3.0's conversions, and the
//! round trips a simulated 0.3 client relies on.

use serde_json::json;

use super::*;

fn task_v1() -> Value {
    json!({
        "id": "t1", "contextId": "c1",
        "status": {"state": "TASK_STATE_INPUT_REQUIRED", "timestamp": "2026-01-01T00:00:00.040Z",
                   "message": {"messageId": "m2", "role": "ROLE_AGENT", "parts": [{"text": "turn-1 done"}]}},
        "artifacts": [{"artifactId": "a1", "name": "turn-1", "parts": [{"text": "turn-1"}, {"data": {"n": 1}}]}],
        "history": [{"messageId": "m1", "role": "ROLE_USER", "contextId": "c1", "taskId": "t1",
                     "parts": [{"text": "hi"}, {"data": {"conversation": "c1", "turn": 1, "turns": 2}}]}]
    })
}

#[test]
fn a_task_reads_as_a_kind_tagged_0_3_task() {
    let t = task_to_v03(&task_v1());
    assert_eq!(t["kind"], "task");
    assert_eq!(t["status"]["state"], "input-required");
    assert_eq!(t["status"]["message"]["kind"], "message");
    assert_eq!(t["status"]["message"]["role"], "agent");
    assert_eq!(t["history"][0]["role"], "user");
    assert_eq!(
        t["history"][0]["parts"][0],
        json!({"kind": "text", "text": "hi"})
    );
    assert_eq!(t["history"][0]["parts"][1]["kind"], "data");
    assert_eq!(
        t["artifacts"][0]["parts"][1],
        json!({"kind": "data", "data": {"n": 1}})
    );
    // Empty history and artifacts are left out, as a2a-sdk's to_compat_task does.
    let bare = task_to_v03(
        &json!({"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}, "history": []}),
    );
    assert!(bare.get("history").is_none() && bare.get("artifacts").is_none());
}

#[test]
fn every_state_has_its_0_3_name_and_back() {
    for (v03, v1) in STATES {
        assert_eq!(state_to_v03(v1), *v03);
        assert_eq!(state_to_v1(v03), Some(*v1));
    }
    assert_eq!(state_to_v03("TASK_STATE_NONSENSE"), "unknown");
}

#[test]
fn the_translation_round_trips_a_task_and_a_message() {
    let t = task_v1();
    assert_eq!(task_to_v1(&task_to_v03(&t)), t);
    let m = &t["history"][0];
    assert_eq!(message_to_v1(&message_to_v03(m)).unwrap(), *m);
}

#[test]
fn parts_follow_a2a_sdk_to_compat_part() {
    assert_eq!(
        part_to_v03(&json!({"url": "http://x/f", "mediaType": "text/plain", "filename": "f"})),
        json!({"kind": "file", "file": {"uri": "http://x/f", "mimeType": "text/plain", "name": "f"}})
    );
    assert_eq!(
        part_to_v03(&json!({"raw": "aGk="})),
        json!({"kind": "file", "file": {"bytes": "aGk="}})
    );
    // A data value that is not an object travels as {value} with data_part_compat.
    let v03 = part_to_v03(&json!({"data": [1, 2]}));
    assert_eq!(
        v03,
        json!({"kind": "data", "data": {"value": [1, 2]}, "metadata": {"data_part_compat": true}})
    );
    assert_eq!(part_to_v1(&v03).unwrap(), json!({"data": [1, 2]}));
    assert!(part_to_v1(&json!({"kind": "image", "x": 1})).is_err());
    assert!(part_to_v1(&json!({"text": "no kind"})).is_err());
}

#[test]
fn send_params_translate_blocking_push_and_history_length() {
    let v03 = json!({
        "message": {"kind": "message", "messageId": "m1", "role": "user", "parts": [{"kind": "text", "text": "hi"}]},
        "configuration": {"blocking": false, "historyLength": 0,
                          "pushNotificationConfig": {"url": "http://h/p", "token": "tok",
                                                     "authentication": {"schemes": ["Bearer"], "credentials": "c"}}}
    });
    let v1 = params_to_v1("SendMessage", &v03).unwrap();
    assert_eq!(v1["message"]["role"], "ROLE_USER");
    assert_eq!(v1["message"]["parts"][0], json!({"text": "hi"}));
    assert_eq!(v1["configuration"]["returnImmediately"], true);
    assert!(
        v1["configuration"].get("historyLength").is_none(),
        "0.3's 0 means all"
    );
    let push = &v1["configuration"]["taskPushNotificationConfig"];
    assert_eq!(
        push["authentication"],
        json!({"scheme": "Bearer", "credentials": "c"})
    );
    assert_eq!(push["token"], "tok");
    // And back, as a 0.3 client writes it.
    let again = params_to_v03("SendMessage", &v1);
    assert_eq!(again["configuration"]["blocking"], false);
    assert_eq!(
        again["configuration"]["pushNotificationConfig"]["url"],
        "http://h/p"
    );
    assert!(params_to_v1(
        "SendMessage",
        &json!({"message": {"role": "user", "parts": []}})
    )
    .is_err());
    assert!(params_to_v1(
        "SendMessage",
        &json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": []}})
    )
    .is_err());
}

#[test]
fn push_config_methods_use_the_0_3_names_and_shapes() {
    let set = json!({"taskId": "t1", "pushNotificationConfig": {"id": "p1", "url": "http://h/p"}});
    let v1 = params_to_v1("CreateTaskPushNotificationConfig", &set).unwrap();
    assert_eq!(v1, json!({"taskId": "t1", "url": "http://h/p", "id": "p1"}));
    assert_eq!(push_config_to_v03(&v1), set);
    assert_eq!(
        params_to_v1(
            "GetTaskPushNotificationConfig",
            &json!({"id": "t1", "pushNotificationConfigId": "p1"})
        )
        .unwrap(),
        json!({"taskId": "t1", "id": "p1"})
    );
    assert_eq!(
        params_to_v1("GetTaskPushNotificationConfig", &json!({"id": "t1"})).unwrap(),
        json!({"taskId": "t1", "id": "t1"})
    );
    assert_eq!(
        params_to_v1("ListTaskPushNotificationConfigs", &json!({"id": "t1"})).unwrap(),
        json!({"taskId": "t1"})
    );
    let list = result_to_v03(
        "ListTaskPushNotificationConfigs",
        &json!({"configs": [v1.clone()]}),
        Final::Terminal,
    );
    assert_eq!(list, json!([set]));
    assert_eq!(result_to_v1(&list), json!({"configs": [v1]}));
}

#[test]
fn status_updates_carry_final_by_the_model_s_rule() {
    let ev = json!({"statusUpdate": {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_INPUT_REQUIRED"}}});
    let sdk = event_to_v03(&ev, Final::Terminal);
    assert_eq!(sdk["kind"], "status-update");
    assert_eq!(sdk["final"], false);
    assert_eq!(event_to_v03(&ev, Final::AtRest)["final"], true);
    let done = json!({"statusUpdate": {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"}}});
    assert_eq!(event_to_v03(&done, Final::Terminal)["final"], true);
    let art = json!({"artifactUpdate": {"taskId": "t", "contextId": "c", "artifact": {"artifactId": "a", "parts": [{"text": "x"}]}}});
    let v03 = event_to_v03(&art, Final::Terminal);
    assert_eq!(v03["kind"], "artifact-update");
    assert_eq!(
        (v03["append"].clone(), v03["lastChunk"].clone()),
        (json!(false), json!(false))
    );
    assert_eq!(
        result_to_v1(&v03)["artifactUpdate"]["artifact"]["parts"][0],
        json!({"text": "x"})
    );
    assert_eq!(
        result_to_v1(&sdk)["statusUpdate"]["status"]["state"],
        "TASK_STATE_INPUT_REQUIRED"
    );
}

#[test]
fn methods_map_both_ways_and_list_tasks_has_no_0_3_name() {
    for (v03, v1) in METHODS {
        assert_eq!(v1_method(v03), Some(*v1));
        assert_eq!(v03_method(v1), Some(*v03));
    }
    assert_eq!(v03_method("ListTasks"), None);
    assert_eq!(v1_method("SendMessage"), None);
    assert!(known_code(-32001) && !known_code(-32009));
}

fn card_v1(secured: bool) -> Value {
    let mut card = crate::protocol::agent_card("d", "0.1.0", "http://127.0.0.1:9/", true, true);
    if secured {
        card["securitySchemes"] = json!({"bearer": {"httpAuthSecurityScheme": {
            "scheme": "Bearer", "bearerFormat": "simjwt"}}});
        card["securityRequirements"] = json!([{"schemes": {"bearer": {}}}]);
    }
    card
}

#[test]
fn a_sdk_compat_card_declares_a_0_3_interface_and_the_0_3_fields_as_the_sdk_merges_them() {
    let mut card = card_v1(true);
    card_with_v03_interface(&mut card);
    // As a2a-sdk 1.3.0 served it (sdk_peer.py --v03-compat --require-bearer, measured).
    assert_eq!(
        card["supportedInterfaces"],
        json!([
            {"url": "http://127.0.0.1:9/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": "http://127.0.0.1:9/", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"}
        ])
    );
    assert_eq!(card["url"], "http://127.0.0.1:9/");
    assert_eq!(card["preferredTransport"], "JSONRPC");
    assert_eq!(card["protocolVersion"], "0.3");
    assert_eq!(card["security"], json!([{"bearer": []}]));
    assert_eq!(
        card["securitySchemes"]["bearer"],
        json!({"httpAuthSecurityScheme": {"scheme": "Bearer", "bearerFormat": "simjwt"},
               "type": "http", "scheme": "Bearer", "bearerFormat": "simjwt"})
    );
    assert_eq!(
        card["securityRequirements"],
        json!([{"schemes": {"bearer": {}}}])
    );
    let mut open = card_v1(false);
    card_with_v03_interface(&mut open);
    assert!(open.get("security").is_none() && open.get("securitySchemes").is_none());
}

#[test]
fn a_native_card_is_mastras_0_3_card() {
    let card = card_native(&card_v1(false));
    assert!(card.get("supportedInterfaces").is_none());
    assert_eq!(card["url"], "http://127.0.0.1:9/");
    assert_eq!(card["protocolVersion"], "0.3.0");
    assert_eq!(card["additionalInterfaces"], json!([]));
    assert_eq!(card["security"], json!([]));
    assert_eq!(card["securitySchemes"], json!({}));
    assert_eq!(
        card["capabilities"],
        json!({"streaming": true, "pushNotifications": true,
               "stateTransitionHistory": false, "extensions": []})
    );
    let secured = card_native(&card_v1(true));
    assert_eq!(secured["security"], json!([{"bearer": []}]));
    assert_eq!(
        secured["securitySchemes"],
        json!({"bearer": {"type": "http", "scheme": "Bearer", "bearerFormat": "simjwt"}})
    );
}
