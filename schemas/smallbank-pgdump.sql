--
-- PostgreSQL database dump
--

\restrict dm6myMw4MLhV9oLHXpgaJ5yd2YazPgygYWQcjhHDsQXbkQUE5VQmI2dD7P53use

-- Dumped from database version 15.18 (Debian 15.18-0+deb12u1)
-- Dumped by pg_dump version 15.18 (Debian 15.18-0+deb12u1)

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: account; Type: TABLE; Schema: public; Owner: postgres
--

CREATE TABLE public.account (
    name character varying(64) NOT NULL,
    customerid integer NOT NULL
);


ALTER TABLE public.account OWNER TO postgres;

--
-- Name: checking; Type: TABLE; Schema: public; Owner: postgres
--

CREATE TABLE public.checking (
    customerid integer NOT NULL,
    balance numeric(12,2) NOT NULL
);


ALTER TABLE public.checking OWNER TO postgres;

--
-- Name: savings; Type: TABLE; Schema: public; Owner: postgres
--

CREATE TABLE public.savings (
    customerid integer NOT NULL,
    balance numeric(12,2) NOT NULL
);


ALTER TABLE public.savings OWNER TO postgres;

--
-- Name: account account_name_key; Type: CONSTRAINT; Schema: public; Owner: postgres
--

ALTER TABLE ONLY public.account
    ADD CONSTRAINT account_name_key UNIQUE (name);


--
-- Name: account account_pkey; Type: CONSTRAINT; Schema: public; Owner: postgres
--

ALTER TABLE ONLY public.account
    ADD CONSTRAINT account_pkey PRIMARY KEY (customerid);


--
-- Name: checking checking_pkey; Type: CONSTRAINT; Schema: public; Owner: postgres
--

ALTER TABLE ONLY public.checking
    ADD CONSTRAINT checking_pkey PRIMARY KEY (customerid);


--
-- Name: savings savings_pkey; Type: CONSTRAINT; Schema: public; Owner: postgres
--

ALTER TABLE ONLY public.savings
    ADD CONSTRAINT savings_pkey PRIMARY KEY (customerid);


--
-- Name: checking fc; Type: FK CONSTRAINT; Schema: public; Owner: postgres
--

ALTER TABLE ONLY public.checking
    ADD CONSTRAINT fc FOREIGN KEY (customerid) REFERENCES public.account(customerid);


--
-- Name: savings fs; Type: FK CONSTRAINT; Schema: public; Owner: postgres
--

ALTER TABLE ONLY public.savings
    ADD CONSTRAINT fs FOREIGN KEY (customerid) REFERENCES public.account(customerid);


--
-- PostgreSQL database dump complete
--

\unrestrict dm6myMw4MLhV9oLHXpgaJ5yd2YazPgygYWQcjhHDsQXbkQUE5VQmI2dD7P53use

