async def test_config_answers_with_valid_credentials(client, auth):
    response = await client.get("/config", auth=auth)
    assert response.status_code == 200
    assert response.json()["environment"] == "sandbox"
